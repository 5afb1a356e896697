/**
 * The parser of every integer command-line flag (`--threads`, `--max-run-tokens`, `--max-steps`,
 * the timeouts...), so they all accept the same spellings and fail with the same words.
 */
import { InvalidArgumentError } from 'commander';
import { describeValue } from '../../errors.ts';

/**
 * Decimal digits only, spaces around them ignored. `Number()` also took `1e3`, `0x10`, `1.0` and
 * `-0` (`--max-run-tokens 1e3` ran with a budget of 1000): a typo must not pass for a number.
 */
const DIGITS = /^\d+$/;

/** Bounds of {@link integerFlag}, and what it is expected to be, as the error says it. */
export interface IntegerFlagOptions {
  /** @default 0 */
  readonly min?: number;
  /** @default Number.MAX_SAFE_INTEGER */
  readonly max?: number;
  /** `a positive integer`, `a non-negative integer of milliseconds (0 = wait for ever)`. */
  readonly expected: string;
}

/**
 * `value` as an integer when it is decimal digits within the bounds, else undefined. For values
 * that are not flags (environment variables), which report their own errors.
 */
export function parseInteger(value: string, min = 0, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const trimmed = value.trim();
  if (!DIGITS.test(trimmed)) return undefined;
  const parsed = Number(trimmed);
  return Number.isSafeInteger(parsed) && parsed >= min && parsed <= max ? parsed : undefined;
}

/**
 * `value` as an integer within the bounds; else commander's InvalidArgumentError (`Expected a
 * positive integer, got \`"1e3"\` (string); write it in digits.`), so the command exits 1 before
 * it runs.
 */
export function integerFlag(value: string, options: IntegerFlagOptions): number {
  const parsed = parseInteger(value, options.min ?? 0, options.max ?? Number.MAX_SAFE_INTEGER);
  if (parsed !== undefined) return parsed;
  const digits = DIGITS.test(value.trim()) ? '' : ' (decimal digits only)';
  throw new InvalidArgumentError(`Expected ${options.expected}${digits}, got ${describeValue(value)}.`);
}

/** A parser of a flag that is a positive integer. */
export function positiveInteger(value: string): number {
  return integerFlag(value, { min: 1, expected: 'a positive integer' });
}

/** A parser of a flag that is a non-negative integer, 0 meaning no limit. */
export function nonNegativeInteger(value: string): number {
  return integerFlag(value, { expected: 'a non-negative integer (0 = unlimited)' });
}
