// Types for the TypeScript files that import the set-up (the test run's global set-up, the
// fault suite's own servers in @pcp/testing, the demo's admin command).

/** The checkout's root folder. */
export const root: string;

/** Incremental TypeScript build of every package (fast when nothing changed). */
export function build(): void;
/** The absolute path of `binary` on PATH (or the sbin folders), if there is one. */
export function which(binary: string): string | undefined;
/** `[command, args]` to run as the postgres user (through runuser when we are root). */
export function asPostgresUser(command: string, args: readonly string[]): [string, string[]];
/** Hand `path` to the postgres user when we are root (PostgreSQL refuses to run as root). */
export function giveToPostgresUser(path: string): void;
/** The initdb and pg_ctl of the newest installed PostgreSQL, if any. */
export function postgresBinaries(): { initdb: string; pgCtl: string } | undefined;
/** Whether `address` accepts TCP connections within `seconds`. */
export function waitUntilAnswers(
  address: { host: string; port: number },
  seconds: number,
): Promise<boolean>;
