// Types for the TypeScript files that import the set-up (the test run's global set-up).

/** Incremental TypeScript build of every package (fast when nothing changed). */
export function build(): void;
