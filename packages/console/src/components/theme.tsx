import { useState } from 'preact/hooks';

type Theme = 'light' | 'dark';
const STORAGE_KEY = 'pcp-console-theme';
const prefersDark = () => matchMedia('(prefers-color-scheme: dark)').matches;

/** The theme chosen with the toggle, if any (else the system's preference applies). */
function chosenTheme(): Theme | undefined {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Put the chosen theme on <html data-theme>: the CSS variables follow it. */
export function applyTheme(theme: Theme | undefined = chosenTheme()): void {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

/** Switches between light and dark; the choice is kept on this device. */
export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(
    () => chosenTheme() ?? (prefersDark() ? 'dark' : 'light'),
  );
  const next: Theme = theme === 'dark' ? 'light' : 'dark';
  return (
    <button
      type="button"
      class="button ghost theme-toggle"
      aria-label={`Use the ${next} theme`}
      onClick={() => {
        try {
          localStorage.setItem(STORAGE_KEY, next);
        } catch {
          // Storage refused (private mode): the choice lasts for this page only.
        }
        applyTheme(next);
        setTheme(next);
      }}
    >
      <span aria-hidden="true">{theme === 'dark' ? '☀' : '☾'}</span>
    </button>
  );
}
