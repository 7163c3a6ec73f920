// What the demo prints, and how a step that did not do what it should fails.

const tty = process.stdout.isTTY && !process.env.NO_COLOR;
const paint =
  (code: number) =>
  (text: unknown): string =>
    tty ? `\x1b[${code}m${String(text)}\x1b[0m` : String(text);
export const bold = paint(1);
export const dim = paint(90);
export const green = paint(32);
export const red = paint(31);
export const cyan = paint(36);
export const yellow = paint(33);

export const out = (line = '') => process.stdout.write(`${line}\n`);
export const note = (text: string) => out(`   ${text}`);

export const money = (amount: unknown) =>
  typeof amount === 'number' ? amount.toFixed(2) : String(amount);
export const short = (id: unknown) => (typeof id === 'string' ? `${id.slice(0, 8)}…` : String(id));
export const json = (value: unknown) => JSON.stringify(value);

let stepNumber = 0;

/** Start the next numbered step. */
export function step(title: string): void {
  stepNumber += 1;
  out();
  out(bold(`${stepNumber}. ${title}`));
}

/** The number of the step running (or last run): the failure report names it. */
export const currentStep = () => stepNumber;

/** A step that did not do what it should: what was expected, and what came. */
export class DemoFailure extends Error {
  constructor(
    readonly expected: string,
    readonly got: string,
    readonly hint = '',
  ) {
    super(`expected ${expected}, got ${got}`);
  }
}

/**
 * Fail the step with what was expected and what came (`got` a function when what came is
 * worth computing only on failure).
 */
export function check(condition: unknown, expected: string, got: unknown): asserts condition {
  if (!condition) {
    const came: unknown = typeof got === 'function' ? (got as () => unknown)() : got;
    throw new DemoFailure(expected, String(came));
  }
}
