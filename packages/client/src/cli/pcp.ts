/**
 * The `pcp` command (the client package's bin): `pcp listen` (listen-command.ts) and
 * `pcp trigger` (trigger-command.ts).
 */
import { listenCommand } from './listen-command.js';
import { triggerCommand } from './trigger-command.js';

const USAGE = `Usage: pcp listen --forward-to URL [--api-key KEY] [--base-url URL]
       pcp trigger <event> [--api-key KEY] [--base-url URL]

Run "pcp listen --help" or "pcp trigger --help" for the details.
`;

const io = {
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
};
const [command, ...args] = process.argv.slice(2);
if (command === 'listen') {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  process.exitCode = await listenCommand(args, io, process.env, stop.signal);
} else if (command === 'trigger') {
  process.exitCode = await triggerCommand(args, io, process.env);
} else {
  io.stderr(USAGE);
  process.exitCode = 2;
}
