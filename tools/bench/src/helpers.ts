// What every bench uses besides the set-up (@pcp/setup): numbers from the environment, pauses,
// rounding, medians and errors as text.

/** A positive number from the environment (or its default), else the bench stops saying so. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : Number(raw);
}

/** A comma-separated list of numbers from the environment. */
export const envNumbers = (name: string, fallback: string): number[] =>
  (process.env[name] ?? fallback).split(',').map(Number);

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const round2 = (value: number) => Math.round(value * 100) / 100;

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** An error's stack, or the value itself. */
export const describeError = (error: unknown) =>
  error instanceof Error ? (error.stack ?? error.message) : String(error);
