/**
 * The image's `npm ci` runs on the manifests the Dockerfile copies before the sources (so the
 * dependency layer is cached): a workspace whose package.json it does not copy makes that
 * install fail or differ from the lockfile, which only an image build would show.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = resolve(import.meta.dirname, '..', '..');

/** The root package's workspaces, with `dir/*` expanded to the folders there. */
function workspaceFolders(): string[] {
  const { workspaces } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    workspaces: string[];
  };
  return workspaces.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [pattern];
    const parent = pattern.slice(0, -2);
    return readdirSync(join(REPO_ROOT, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${parent}/${entry.name}`);
  });
}

describe('the Dockerfile', () => {
  it('copies the manifest of every workspace before its npm ci', () => {
    const text = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const beforeInstall = text.slice(
      0,
      text.indexOf('RUN --mount=type=cache,target=/root/.npm npm ci'),
    );
    const copied = [...beforeInstall.matchAll(/^COPY (\S+)\/package\.json \1\/$/gm)].map(
      (match) => match[1],
    );
    expect(copied.sort()).toEqual(workspaceFolders().sort());
  });
});
