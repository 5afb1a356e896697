/**
 * Checks shared by every options module (supervisor, engines, workers): each throws UserError
 * `invalid_option` saying what was expected and what was found, and returns the value or the default.
 */
import { MAX_TIMER_MS } from './constants.ts';
import { describeValue, UserError } from './errors.ts';

/**
 * An integer >= `min` (1 unless given) and <= `max` (when given), or `fallback` when undefined. A
 * size limit passes a `max`: what would otherwise crash the process (a buffer or string past V8's
 * bound) is refused here, naming the option and its range.
 */
export function positiveInt(name: string, value: unknown, fallback: number, min = 1, max?: number): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < min ||
    (max !== undefined && value > max)
  ) {
    const expected = min === 1 ? 'a positive integer' : `an integer >= ${min}`;
    const range = max === undefined ? '' : ` up to ${max}`;
    throw new UserError(
      'invalid_option',
      `Expected \`${name}\` to be ${expected}${range}, got ${describeValue(value)}`,
      max === undefined ? { option: name } : { option: name, max },
    );
  }
  return value;
}

/**
 * A finite number >= 0 (and <= `max` when given), or `fallback` when undefined. A time limit passes
 * `max: MAX_TIMER_MS`: past it Node fires a timer at once, so the limit would end the wait at once.
 */
export function nonNegative(name: string, value: unknown, fallback: number, max?: number): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (max !== undefined && value > max)
  ) {
    const range = max === undefined ? '' : ` up to ${max}`;
    throw new UserError(
      'invalid_option',
      `Expected \`${name}\` to be a non-negative number${range}, got ${describeValue(value)}`,
      { option: name },
    );
  }
  return value;
}

/** One of `allowed`, or `fallback` when undefined. */
export function oneOf<T extends string>(name: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    const list = allowed.map((a) => `'${a}'`);
    const expected = list.length === 2 ? `${list[0]} or ${list[1]}` : `one of ${list.join(', ')}`;
    throw new UserError(
      'invalid_option',
      `Expected \`${name}\` to be ${expected}, got ${describeValue(value)}`,
      {
        option: name,
      },
    );
  }
  return value as T;
}

/**
 * A time limit in milliseconds that arms a timer, or `fallback` when undefined: a non-negative
 * number (`non-negative`, as {@link nonNegative} checks it) or an integer >= 1 (`positive
 * integer`, as {@link positiveInt}), and at most {@link MAX_TIMER_MS}. Past it Node fires a timer
 * at once (with a warning), so the limit would end the wait at once: every option that arms a
 * timer is checked here, and a timer armed from one takes {@link timerDelay} of it.
 */
export function timeLimit(
  name: string,
  value: unknown,
  fallback: number,
  kind: 'non-negative' | 'positive integer' = 'non-negative',
): number {
  if (kind === 'non-negative') return nonNegative(name, value, fallback, MAX_TIMER_MS);
  const ms = positiveInt(name, value, fallback);
  if (ms > MAX_TIMER_MS) {
    throw new UserError('invalid_option', `Expected \`${name}\` to be at most ${MAX_TIMER_MS}, got ${ms}`, {
      option: name,
    });
  }
  return ms;
}

/**
 * The delay to arm a timer with for `ms`: at most {@link MAX_TIMER_MS}, the longest Node keeps
 * (a longer one fires at once). A limit checked by {@link timeLimit} is already within it; a
 * computed one (a backoff, seconds times 1,000) is capped here.
 */
export function timerDelay(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS);
}
