/**
 * Regular expressions that come from files (plans, data sets) and run against text that comes from
 * models. JavaScript's RegExp backtracks, so a pattern such as `(a+)+$` takes exponential time on
 * `aaaa…b`; a plan must not be able to hang a run that way. Patterns are compiled here, and only
 * here, with RE2 (re2js, a pure-JavaScript port of Google's RE2), whose matching time is linear in
 * the text: no backtracking, so no catastrophic case. RE2 syntax has no backreferences and no
 * lookaround; a pattern using them is rejected with a clear message.
 *
 * Any code that runs an untrusted pattern (a `grep` tool, a scorer) should go through
 * {@link compileSafePattern}.
 */
import type * as Re2js from 're2js';
import { describeValue, UserError } from '../errors.ts';
import { lazyPackage } from '../require-package.ts';
import { MAX_PATTERN_CHARS } from './constants.ts';

/** A compiled pattern. */
export interface SafePattern {
  readonly source: string;
  readonly flags: string;
  /** True when the pattern matches somewhere in `text` (time linear in the text's length). */
  test(text: string): boolean;
  /** The first match and its groups (index 0 is the whole match), or null. */
  exec(text: string): readonly (string | null)[] | null;
}

// Loaded by the first pattern compiled (src/require-package.ts).
const re2 = lazyPackage<typeof Re2js>('re2js');

/** Each flag's name in RE2JS. */
const FLAG_NAMES = { i: 'CASE_INSENSITIVE', m: 'MULTILINE', s: 'DOTALL' } as const;

/** The flags {@link compileSafePattern} accepts. */
export const SAFE_PATTERN_FLAGS = Object.keys(FLAG_NAMES).join('');

/**
 * Why `pattern` (with `flags`) cannot be compiled, or undefined when it can. For validators that
 * report problems instead of throwing.
 */
export function safePatternProblem(pattern: unknown, flags: unknown = ''): string | undefined {
  if (typeof pattern !== 'string' || pattern === '')
    return `expected a non-empty regular expression, got ${describeValue(pattern)}`;
  if (pattern.length > MAX_PATTERN_CHARS)
    return `expected a regular expression of at most ${MAX_PATTERN_CHARS} characters, got ${pattern.length}`;
  if (typeof flags !== 'string' || [...flags].some((flag) => !Object.hasOwn(FLAG_NAMES, flag)))
    return `expected flags made of ${[...SAFE_PATTERN_FLAGS].map((f) => `\`${f}\``).join(', ')}, got ${describeValue(flags)}`;
  try {
    re2().RE2JS.compile(pattern, bits(flags));
    return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `expected a regular expression in RE2 syntax (no backreferences or lookaround), got ${describeValue(pattern)}: ${reason}`;
  }
}

/**
 * Compiles `pattern` for linear-time matching. Throws UserError `invalid_pattern` (fields:
 * `pattern`, `flags`) when it is too long, uses unknown flags, or is not valid RE2 syntax.
 */
export function compileSafePattern(pattern: string, flags = ''): SafePattern {
  const problem = safePatternProblem(pattern, flags);
  if (problem !== undefined)
    throw new UserError('invalid_pattern', `Invalid pattern: ${problem}`, { pattern, flags });
  const compiled = re2().RE2JS.compile(pattern, bits(flags));
  return {
    source: pattern,
    flags,
    test: (text) => compiled.matcher(text).find(),
    exec: (text) => {
      const matcher = compiled.matcher(text);
      if (!matcher.find()) return null;
      const groups: (string | null)[] = [];
      for (let group = 0; group <= matcher.groupCount(); group += 1) groups.push(matcher.group(group));
      return groups;
    },
  };
}

function bits(flags: string): number {
  let value = 0;
  const { RE2JS } = re2();
  for (const flag of flags) {
    if (Object.hasOwn(FLAG_NAMES, flag)) value |= RE2JS[FLAG_NAMES[flag as keyof typeof FLAG_NAMES]];
  }
  return value;
}
