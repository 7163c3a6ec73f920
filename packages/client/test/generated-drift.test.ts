import { fixtureStoreIds as platformFixtureStoreIds } from '@pcp/contracts';
import { buildOpenApiDocument } from '@pcp/gateway';
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureStoreIds } from '../src/sandbox.js';
import { documentPath, documentText, typesPath, typesText } from '../generate/client-generation.js';

/**
 * The client's checked-in document and types are what the current routes make, so the
 * typed client cannot drift from the API: a route changed without `npm run generate:client`
 * fails here.
 */

/** Fails, saying what to run and where the files first differ, unless they are equal. */
function expectUpToDate(file: string, expected: string, actual: string) {
  if (expected === actual) return;
  const [want, got] = [expected.split('\n'), actual.split('\n')];
  const differs = want.findIndex((text, index) => text !== got[index]);
  const line = differs === -1 ? want.length : differs;
  expect.fail(
    `${file} is out of date with the routes: run \`npm run generate:client\` and commit it.\n` +
      `First difference, line ${line + 1}:\n  generated:  ${want[line]}\n  checked in: ${got[line]}`,
  );
}

const checkedIn = (path: string) => readFile(path, 'utf8').catch(() => '');

describe('the generated client', () => {
  it(`${relative(process.cwd(), documentPath)} is the document the gateway serves`, async () => {
    const rendered = await documentText(await buildOpenApiDocument());
    expectUpToDate('packages/client/openapi.json', rendered, await checkedIn(documentPath));
  }, 60_000);

  it(`${relative(process.cwd(), typesPath)} is generated from that document`, async () => {
    const generated = await typesText(await checkedIn(documentPath));
    expectUpToDate(
      'packages/client/src/generated/openapi.ts',
      generated,
      await checkedIn(typesPath),
    );
  }, 60_000);

  it('names the fixture stores the platform seeds', () => {
    expect(fixtureStoreIds).toEqual(platformFixtureStoreIds);
  });
});
