import type { Kysely } from 'kysely';
import type { JetStreamClient, JetStreamManager, NatsConnection } from 'nats';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { BaseEnv } from './config.js';
import type { Logger } from './logger.js';

/** A command called wrongly (unknown, a bad or missing option): printed with the usage. */
export class AdminUsageError extends Error {}

/** A command that could not do what it was asked (nothing to do, a refused publish). */
export class AdminError extends Error {}

/** How a command's options are declared: node:util `parseArgs` options. */
export type AdminOptions = NonNullable<ParseArgsConfig['options']>;

/** The option values `parseArgs` gives for `O` (strings and booleans, undefined when absent). */
export type AdminArgs<O extends AdminOptions = AdminOptions> = ReturnType<
  typeof parseArgs<{ options: O; strict: true; allowPositionals: false }>
>['values'];

/** What an admin command gets: the service's connections, as the service makes them. */
export interface AdminContext<DB = unknown, Args = AdminArgs> {
  readonly db: Kysely<DB>;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Writes to stderr: stdout holds the result alone. */
  readonly logger: Logger;
  /**
   * The process's kit configuration (servers, prefix, JetStream settings). A service's own
   * configuration is in scope where its `main.ts` declares its commands.
   */
  readonly config: BaseEnv;
  /** The deployment's subject prefix (`NATS_SUBJECT_PREFIX`). */
  readonly prefix: string;
  /** The options after the command's name, parsed against its declaration. */
  readonly args: Args;
}

/** One command of `main.js admin <command>`; build it with {@link adminCommand}. */
export interface AdminCommand<DB = unknown> {
  /** Its options for the usage text, e.g. `--sequence N | --all`. */
  readonly usage: string;
  /** What it does, in a few words. */
  readonly summary: string;
  readonly options: AdminOptions;
  /** Checks the parsed options before anything connects; throws AdminUsageError. */
  check(args: AdminArgs): unknown;
  /** Its result, printed as JSON on the last line of stdout. */
  run(context: AdminContext<DB, unknown>): Promise<unknown>;
}

/** A service's admin commands by name (`outbox-list`, `reconcile`, ...). */
export type AdminCommands<DB = unknown> = Readonly<Record<string, AdminCommand<DB>>>;

/**
 * Declare a command. Unknown options, a string option without a value and positional
 * arguments are refused before it runs; `check` (optional) turns the options into what `run`
 * gets as `args`, or refuses them (AdminUsageError), before anything connects. Without it
 * `run` gets the options as parsed, typed from `options`.
 *
 * @example
 * // services/payments/src/main.ts, in runService<PaymentsDatabase>({ ... }): DB comes from
 * // there, the arguments' type from `check`.
 * admin: {
 *   reconcile: adminCommand({
 *     usage: '[--limit N]',
 *     summary: 'settle charges the processor and the database disagree on',
 *     options: { limit: { type: 'string' } },
 *     check: (args) => ({ limit: integerOption(args, 'limit', { min: 1, max: 500 }, 100) }),
 *     run: ({ db, args }) => reconcileCharges(db, config, args.limit),
 *   }),
 * },
 */
export function adminCommand<DB, const O extends AdminOptions, A = AdminArgs<O>>(command: {
  readonly usage: string;
  readonly summary: string;
  readonly options: O;
  check?(args: AdminArgs<O>): A;
  run(context: AdminContext<DB, A>): Promise<unknown>;
}): AdminCommand<DB> {
  return {
    usage: command.usage,
    summary: command.summary,
    options: command.options,
    // The dispatcher parsed the arguments against these very options, and `run` gets what
    // `check` returned.
    check: (args) => (command.check ? command.check(args as AdminArgs<O>) : args),
    run: (context) => command.run(context as AdminContext<DB, A>),
  };
}

/** The usage text of a service's commands. */
export function adminUsage<DB>(service: string, commands: AdminCommands<DB>): string {
  const lines = Object.entries(commands).flatMap(([name, command]) => [
    `  ${name} ${command.usage}`.trimEnd(),
    `      ${command.summary}`,
  ]);
  return [
    `Usage: node services/${service}/dist/main.js admin <command> [options]`,
    ...lines,
    'Each command prints its result as JSON on the last line of stdout.',
  ].join('\n');
}

/** The command `argv` names and its checked options; AdminUsageError when either is wrong. */
export function parseAdminCall<DB>(
  commands: AdminCommands<DB>,
  argv: readonly string[],
): { name: string; command: AdminCommand<DB>; args: unknown } {
  const [name, ...rest] = argv;
  if (!name) throw new AdminUsageError('no command given');
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) throw new AdminUsageError(`unknown command ${name}`);
  let values: AdminArgs;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: command.options,
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    // parseArgs explains at length how to pass a dash; its first sentence is the problem.
    const message = error instanceof Error ? error.message.split('. ')[0]! : String(error);
    throw new AdminUsageError(`${name}: ${message}`);
  }
  try {
    return { name, command, args: command.check(values) };
  } catch (error) {
    if (error instanceof AdminUsageError) error.message = `${name}: ${error.message}`;
    throw error;
  }
}

/**
 * An integer option: `fallback` when absent, AdminUsageError when it is not a whole number
 * within `min..max` (every list a command prints is bounded this way).
 */
export function integerOption(
  args: AdminArgs,
  name: string,
  bounds: { min: number; max: number },
  fallback: number,
): number;
export function integerOption(
  args: AdminArgs,
  name: string,
  bounds: { min: number; max: number },
): number | undefined;
export function integerOption(
  args: AdminArgs,
  name: string,
  bounds: { min: number; max: number },
  fallback?: number,
): number | undefined {
  const value = args[name];
  if (value === undefined) return fallback;
  const number = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!(number >= bounds.min && number <= bounds.max)) {
    throw new AdminUsageError(
      `--${name} must be a whole number from ${bounds.min} to ${bounds.max}`,
    );
  }
  return number;
}
