/** The `pcp-catalog` command (the client package's bin): see dry-run-command.ts. */
import { main } from './dry-run-command.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
});
