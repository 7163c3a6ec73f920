import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const root = join(import.meta.dirname, '..', '..', '..', '..');

/** What `redocly lint` reports of a document, with the repository's redocly.yaml. */
export interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; message: string; severity: string }[];
}

/** `redocly lint` of `document` (written to a temporary file, removed after). */
export async function redoclyLint(document: unknown): Promise<LintReport> {
  const directory = await mkdtemp(join(tmpdir(), 'pcp-openapi-'));
  try {
    const path = join(directory, 'openapi.json');
    await writeFile(path, JSON.stringify(document));
    const result = await promisify(execFile)(
      join(root, 'node_modules', '.bin', 'redocly'),
      ['lint', path, '--format', 'json', '--config', join(root, 'redocly.yaml')],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    ).catch((error: { stdout?: string }) => error);
    return JSON.parse(result.stdout ?? '{}') as LintReport;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
