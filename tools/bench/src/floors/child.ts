// The floors' processes: a TypeScript module of this workspace run as a child of the bench
// platform, with its input on stdin; it prints one JSON line once it serves.
import { serverUrls } from '@pcp/setup';
import type { BenchPlatform, Env } from '../platform/bench-platform.js';
import { tsEntry } from '../ts-modules.js';

/** What starts and, at the end, stops the children: the bench platform, or a test's own. */
export type ChildStarter = Pick<BenchPlatform, 'startChild'>;

/** Start `file` as the child `name` with `input` on stdin; resolves its first JSON line. */
export async function startFloorChild<T>(
  platform: ChildStarter,
  name: string,
  file: string,
  input: string | Buffer,
  env: Env = {},
): Promise<T> {
  const child = platform.startChild(name, tsEntry(file), {
    env: { ...process.env, NATS_URL: serverUrls.nats, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin?.end(input);
  const line = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (text.includes('\n')) resolve(text.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited (code ${code})`)));
  });
  return JSON.parse(line) as T;
}

/** All of stdin. */
export async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Print the line the parent waits for. */
export const announce = (value: object) => process.stdout.write(`${JSON.stringify(value)}\n`);
