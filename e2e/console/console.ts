import type { Page } from 'playwright-core';

/** Open the console and sign in with `apiKey`, as a partner would: paste, press Enter. */
export async function signIn(page: Page, apiKey: string): Promise<void> {
  await page.goto('/console');
  const field = page.getByLabel('API key');
  await field.fill(apiKey);
  await field.press('Enter');
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
