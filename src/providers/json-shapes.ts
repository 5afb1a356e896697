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

/**
 * `JSON.parse`, also reading the `NaN`, `Infinity` and `-Infinity` that Python's `json.dumps`
 * writes by default (servers written in Python put them in usage counts). They become `null`,
 * which no reader here takes for a number: such a count is unreadable and estimated like any other
 * (docs/limits.md). Text that is not JSON either way throws `JSON.parse`'s error. The second
 * reading is tried only after the first failed, so a well-formed body pays nothing for it.
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const standard = withoutNonFiniteNumbers(text);
    if (standard === undefined) throw error;
    try {
      return JSON.parse(standard);
    } catch {
      throw error;
    }
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Their first characters are N, I and -. */
const NON_FINITE = ['NaN', 'Infinity', '-Infinity'] as const;

/** `text` with every `NaN`, `Infinity` and `-Infinity` outside strings written `null`; undefined when it has none. */
function withoutNonFiniteNumbers(text: string): string | undefined {
  const parts: string[] = [];
  let copied = 0;
  let index = 0;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      // Past the string, escapes included.
      index += 1;
      while (index < text.length) {
        const inner = text.charCodeAt(index);
        index += inner === BACKSLASH ? 2 : 1;
        if (inner === QUOTE) break;
      }
      continue;
    }
    const token =
      code === 0x4e || code === 0x49 || code === 0x2d
        ? NON_FINITE.find((name) => text.startsWith(name, index))
        : undefined;
    if (token === undefined) {
      index += 1;
      continue;
    }
    parts.push(text.slice(copied, index), 'null');
    index += token.length;
    copied = index;
  }
  if (parts.length === 0) return undefined;
  parts.push(text.slice(copied));
  return parts.join('');
}
