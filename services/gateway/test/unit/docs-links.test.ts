import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { headingAnchor } from '../../src/docs/guides.js';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Every file of the repository (tracked or new, not ignored), relative to its root. */
const repositoryFiles = execFileSync(
  'git',
  ['ls-files', '--cached', '--others', '--exclude-standard', '-z'],
  { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
)
  .split('\0')
  .filter((file) => file !== '' && existsSync(join(REPO_ROOT, file)));

const markdownFiles = repositoryFiles.filter(
  (file) => file === 'README.md' || (file.startsWith('docs/') && file.endsWith('.md')),
);

/** Inline links and images, `[text](target)`, outside fenced code. */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1] ?? '');
}

const anchorsOf = (markdown: string) =>
  new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((match) => headingAnchor(match[1] ?? '')));

describe('the documentation stands alone', () => {
  it('has the README and the docs to check', () => {
    expect(markdownFiles).toContain('README.md');
    expect(markdownFiles.filter((file) => file.startsWith('docs/guide/')).length).toBe(10);
  });

  it.each(markdownFiles)('every relative link of %s resolves in the repository', (file) => {
    const source = readFileSync(join(REPO_ROOT, file), 'utf8');
    const broken: string[] = [];
    for (const link of linksOf(source)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
      const [path = '', anchor] = link.split('#');
      const target =
        path === '' ? join(REPO_ROOT, file) : resolve(dirname(join(REPO_ROOT, file)), path);
      if (relative(REPO_ROOT, target).startsWith('..') || !existsSync(target)) {
        broken.push(`${link}: no such file in the repository`);
        continue;
      }
      if (anchor !== undefined && statSync(target).isFile() && target.endsWith('.md')) {
        if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
          broken.push(`${link}: no heading #${anchor}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(markdownFiles)('every repository path %s names in code spans exists', (file) => {
    const source = readFileSync(join(REPO_ROOT, file), 'utf8');
    const missing = [
      ...source.matchAll(/`((?:services|packages|tools|deploy|e2e|scripts|docs)\/[^`\s*<>{}]+)`/g),
    ]
      .map((match) => match[1] ?? '')
      .filter((path) => !existsSync(join(REPO_ROOT, path.replace(/:\d+$/, ''))));
    expect(missing).toEqual([]);
  });

  it('the partner guides link only to each other or to absolute URLs', () => {
    for (const file of markdownFiles.filter((name) => name.startsWith('docs/guide/'))) {
      const source = readFileSync(join(REPO_ROOT, file), 'utf8');
      for (const link of linksOf(source)) {
        expect(link, file).toMatch(/^(https?:\/\/|#|[a-z-]+\.md(#|$))/);
      }
    }
  });

  it('every docs/ page (and #heading) a source file cites exists', () => {
    const sources = repositoryFiles.filter(
      (file) => /\.(ts|mjs|js|ya?ml)$/.test(file) && !file.includes('/generated/'),
    );
    const broken: string[] = [];
    for (const file of sources) {
      const text = readFileSync(join(REPO_ROOT, file), 'utf8');
      for (const [citation, page = '', anchor] of text.matchAll(
        /\b(docs\/[\w/-]+\.md)(?:#([\w-]+))?/g,
      )) {
        const target = join(REPO_ROOT, page);
        if (!existsSync(target)) broken.push(`${file}: ${citation} (no such page)`);
        else if (anchor !== undefined && !anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
          broken.push(`${file}: ${citation} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('no file cites a path outside the repository', () => {
    // Built from parts, so this file does not cite it either.
    const outside = ['..', 'shared'].join('/');
    const citing = repositoryFiles.filter((file) => {
      const path = join(REPO_ROOT, file);
      if (!statSync(path).isFile() || statSync(path).size > 5_000_000) return false;
      return readFileSync(path, 'utf8').includes(outside);
    });
    expect(citing).toEqual([]);
  });
});
