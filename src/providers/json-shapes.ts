/** Narrowing helpers for provider JSON, which is untrusted and varies between servers. */

/** The value as a plain object, or undefined. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The value as an array, or an empty one. */
export function asArray(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The value when it is a string. */
export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The value when it is a finite number. */
export function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * The value when it is a token count a server could mean: a whole number from 0 to 2^53 - 1 (1e308
 * made a run's total Infinity). Usage
 * is untrusted like the rest: a negative count would lower an agent's and a run's spend (and let
 * every budget be passed), a string is no count at all.
 */
export function asCount(value: unknown): number | undefined {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;
}
