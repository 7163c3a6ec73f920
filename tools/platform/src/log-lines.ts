// What the supervisor makes of its processes' output: pino JSON lines as readable, prefixed
// lines; error lines in short (a crash loop's explanation); a readiness answer in short.

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const COLORS: Record<string, number> = {
  'processor-simulator': 90,
  stores: 36,
  catalog: 35,
  ordering: 33,
  payments: 34,
  gateway: 32,
};
const LABEL_WIDTH = 9;

/** Colours an escape sequence when stdout is a terminal. */
export function paint(code: number, text: string): string {
  return process.stdout.isTTY ? `\x1b[${code}m${text}\x1b[0m` : text;
}

/** `processor` for the simulator, the process name otherwise (`ordering#2`). */
function labelOf(name: string): string {
  return name.replace(/^processor-simulator/, 'processor').padEnd(LABEL_WIDTH);
}

interface PinoEntry {
  time?: unknown;
  level?: number;
  msg?: string;
  err?: { message?: string; stack?: string };
  [key: string]: unknown;
}

function parse(line: string): PinoEntry | undefined {
  try {
    const entry: unknown = JSON.parse(line);
    return entry && typeof entry === 'object' ? (entry as PinoEntry) : undefined;
  } catch {
    return undefined;
  }
}

/** One pino JSON line of `name` → `12:00:00.123 stores    INFO  message key=value`. */
export function formatLine(name: string, service: string, line: string): string {
  const label = paint(COLORS[service] ?? 0, labelOf(name));
  const entry = parse(line);
  if (!entry) return `${label} ${line}`;
  const { time, level = 30, msg, service: _s, pid: _p, hostname: _h, err, ...rest } = entry;
  const clock = typeof time === 'string' ? time.slice(11, 23) : '';
  const levelText = (LEVELS[level] ?? String(level)).padEnd(5);
  const extra = Object.entries(rest)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const error = err ? `\n${err.stack ?? err.message}` : '';
  return `${clock} ${label} ${level >= 50 ? paint(31, levelText) : levelText} ${msg ?? ''} ${paint(90, extra)}${error}`;
}

/**
 * What an error line says in short: a pino line of level 50 and above as its message and
 * error; a line on stderr that is not JSON (an uncaught error) unless it is a stack frame.
 */
export function errorSummary(line: string, fromStderr: boolean): string | undefined {
  const entry = parse(line);
  if (!entry) {
    const frame = /^\s+at\s|^Node\.js v|^\s*$/.test(line);
    return fromStderr && !frame ? line.trimEnd() : undefined;
  }
  if (!((entry.level ?? 0) >= 50)) return undefined;
  return [entry.msg, entry.err?.message].filter(Boolean).join(': ');
}

/** `database failing (nats, subjects pass)` from a /health/ready answer. */
export function describeReadiness(status: number, body: string): string {
  const checks = (parse(body) as { checks?: unknown } | undefined)?.checks;
  if (!checks || typeof checks !== 'object') return `HTTP ${status}`;
  const results = Object.entries(checks as Record<string, unknown>);
  const failing = results.filter(([, ok]) => ok !== true).map(([name]) => name);
  const passing = results.filter(([, ok]) => ok === true).map(([name]) => name);
  if (failing.length === 0) return `every check passes (${passing.join(', ')})`;
  return `${failing.join(', ')} failing${passing.length ? ` (${passing.join(', ')} pass)` : ''}`;
}
