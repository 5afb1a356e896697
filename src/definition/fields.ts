/**
 * Readers for single frontmatter values. Each one reports what it expected and what it found at the
 * value's position, and returns undefined for a value it cannot use, so validation goes on and
 * every problem in the file is collected.
 */
import { describeValue } from '../errors.ts';
import { memberPath } from '../member-path.ts';
import type { FrontmatterData } from './frontmatter-data.ts';
import { expectedNumber, inRange, type NumberRange, RETRY_RANGES } from './number-ranges.ts';
import type { PathSegment, ProblemList } from './problems.ts';
import type { RetryPolicy } from './types.ts';

/** What every field reader needs: where values are and where problems go. */
export interface FieldContext {
  readonly data: FrontmatterData;
  readonly problems: ProblemList;
}

/** A plain key -> value object (not a list, not null). */
export type PlainObject = Readonly<Record<string, unknown>>;

/** True when a key is written with a value; `key:` with nothing after it counts as not written. */
export function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

export function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `completionRequirement.recovery.maxRetries`, `tools[2]`: how messages name a value (see {@link memberPath}). */
export function label(path: readonly PathSegment[]): string {
  return memberPath(path);
}

/** Records an `invalid_field` error: "Expected `x` to be <expected>, got <found>". */
export function invalid(
  ctx: FieldContext,
  path: readonly PathSegment[],
  expected: string,
  value: unknown,
): void {
  ctx.problems.error(
    'invalid_field',
    `Expected \`${label(path)}\` to be ${expected}, got ${describeValue(value)}`,
    ctx.data.valueAt(path),
    path,
  );
}

export function readString(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
): string | undefined {
  if (typeof value === 'string' && value.trim() !== '') return value.trim();
  invalid(ctx, path, 'a non-empty string', value);
  return undefined;
}

export function readBoolean(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
): boolean | undefined {
  if (typeof value === 'boolean') return value;
  invalid(ctx, path, '`true` or `false`', value);
  return undefined;
}

export function readEnum<T extends string>(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
  allowed: readonly T[],
): T | undefined {
  const found = allowed.find((option) => option === value);
  if (found !== undefined) return found;
  invalid(ctx, path, `one of ${allowed.map((option) => `\`${option}\``).join(', ')}`, value);
  return undefined;
}

/**
 * Integers and finite numbers within a range (`min: 1` for counts that cannot be zero, `max` for
 * a size or a time; see number-ranges.ts). A value out of range is an `invalid_field` error at its
 * line and column naming the field and the range: "Expected `bash.outputByteLimit` to be a
 * positive integer up to 2000000, got `1000000000000` (number)".
 */
export function readNumber(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
  range: NumberRange,
): number | undefined {
  if (inRange(value, range)) return value;
  invalid(ctx, path, expectedNumber(range), value);
  return undefined;
}

export function readObject(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
): PlainObject | undefined {
  if (isPlainObject(value)) return value;
  invalid(ctx, path, 'a mapping of keys to values', value);
  return undefined;
}

/** Names given as a YAML list or as one comma-separated string (Claude Code's `tools: Read, Grep`). */
export type NameList =
  | { readonly kind: 'all' }
  | { readonly kind: 'names'; readonly names: readonly string[] };

/**
 * Reads a list of names. `*` (alone, or as an item) means "all". Items that are not strings are
 * reported one by one; duplicates are dropped.
 */
export function readNameList(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
): NameList | undefined {
  let items: string[];
  if (typeof value === 'string') {
    items = value.split(',').map((item) => item.trim());
  } else if (Array.isArray(value)) {
    items = [];
    value.forEach((item: unknown, index) => {
      if (typeof item === 'string' && item.trim() !== '') items.push(item.trim());
      else invalid(ctx, [...path, index], 'a name', item);
    });
  } else {
    invalid(ctx, path, 'a list of names or a comma-separated string', value);
    return undefined;
  }
  const names = [...new Set(items.filter((item) => item !== ''))];
  return names.includes('*') ? { kind: 'all' } : { kind: 'names', names };
}

/** Warns about keys of `object` (at `path`) that are not in `known`. */
export function warnUnknownKeys(
  ctx: FieldContext,
  path: readonly PathSegment[],
  object: PlainObject,
  known: readonly string[],
): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const where = path.length === 0 ? '' : ` in \`${label(path)}\``;
    ctx.problems.warning(
      'unknown_key',
      `Unknown key \`${key}\`${where}${suggestion(key, known)}; ignored`,
      ctx.data.keyAt([...path, key]),
      [...path, key],
    );
  }
}

/**
 * ` (did you mean \`maxSteps\`?)` when `key` differs from a known key only in case or separators,
 * or (for keys of three characters or more) by one letter added, dropped or changed, or two
 * neighbours swapped (`runLimit` -> `runLimits`, `run` -> `runs`, `maxStpes` -> `maxSteps`); empty
 * otherwise.
 */
export function suggestion(key: string, known: Iterable<string>): string {
  const normalize = (text: string) => text.toLowerCase().replaceAll(/[-_\s]/g, '');
  const candidates = [...known];
  const target = normalize(key);
  const hit =
    candidates.find((candidate) => normalize(candidate) === target) ??
    (target.length >= 3
      ? candidates.find((candidate) => oneEditApart(normalize(candidate), target))
      : undefined);
  return hit === undefined ? '' : ` (did you mean \`${hit}\`?)`;
}

/** Whether `a` becomes `b` by one letter added, dropped or changed, or two neighbours swapped. */
function oneEditApart(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1 || a === b) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  if (a.length === b.length) {
    const swapped = a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
    return swapped || a.slice(i + 1) === b.slice(i + 1);
  }
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

const RETRY_KEYS = ['maxRetries', 'baseDelayMs', 'maxDelayMs'] as const;

/** Reads a retry policy; every key is optional and falls back to `defaults`. */
export function readRetryPolicy(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
  defaults: RetryPolicy,
): RetryPolicy | undefined {
  if (!isSet(value)) return defaults;
  const object = readObject(ctx, path, value);
  if (!object) return undefined;
  warnUnknownKeys(ctx, path, object, RETRY_KEYS);
  const read = (key: (typeof RETRY_KEYS)[number]): number | undefined =>
    isSet(object[key]) ? readNumber(ctx, [...path, key], object[key], RETRY_RANGES[key]) : defaults[key];
  const maxRetries = read('maxRetries');
  const baseDelayMs = read('baseDelayMs');
  // An unset cap follows a raised base delay rather than contradicting it.
  const maxDelayMs = isSet(object.maxDelayMs)
    ? read('maxDelayMs')
    : Math.max(defaults.maxDelayMs, baseDelayMs ?? 0);
  if (maxRetries === undefined || baseDelayMs === undefined || maxDelayMs === undefined) return undefined;
  if (maxDelayMs < baseDelayMs) {
    invalid(ctx, [...path, 'maxDelayMs'], `at least \`baseDelayMs\` (${baseDelayMs})`, maxDelayMs);
    return undefined;
  }
  return { maxRetries, baseDelayMs, maxDelayMs };
}
