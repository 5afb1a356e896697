import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { compileSafePattern, safePatternProblem } from '../../src/eval/safe-regex.ts';

describe('compileSafePattern', () => {
  it('matches in linear time where a backtracking engine would never finish', () => {
    // JavaScript's RegExp takes exponential time here (2^100000 paths); RE2 answers at once.
    const pattern = compileSafePattern('^(a+)+$');
    expect(pattern.test(`${'a'.repeat(100_000)}b`)).toBe(false);
    expect(pattern.test('aaaa')).toBe(true);
  });

  it('finds a match anywhere and returns its groups', () => {
    const pattern = compileSafePattern('answer:\\s*(\\d+)', 'i');
    expect(pattern.test('The ANSWER: 42.')).toBe(true);
    expect(pattern.exec('The ANSWER: 42.')).toEqual(['ANSWER: 42', '42']);
    expect(pattern.exec('no number')).toBeNull();
  });

  it('honours the m and s flags', () => {
    expect(compileSafePattern('^b$').test('a\nb')).toBe(false);
    expect(compileSafePattern('^b$', 'm').test('a\nb')).toBe(true);
    expect(compileSafePattern('a.b').test('a\nb')).toBe(false);
    expect(compileSafePattern('a.b', 's').test('a\nb')).toBe(true);
  });

  it('refuses backreferences and lookaround with a message naming RE2 syntax', () => {
    for (const pattern of ['(a)\\1', '(?=a)a', '(?<!a)b']) {
      expect(safePatternProblem(pattern)).toMatch(/RE2 syntax \(no backreferences or lookaround\)/);
      expect(() => compileSafePattern(pattern)).toThrow(expect.objectContaining({ code: 'invalid_pattern' }));
    }
  });

  it('refuses overlong patterns, empty patterns and unknown flags', () => {
    expect(safePatternProblem('a'.repeat(2001))).toMatch(/at most 2000 characters, got 2001/);
    expect(safePatternProblem('')).toMatch(/non-empty regular expression/);
    expect(safePatternProblem('a', 'g')).toMatch(/expected flags made of `i`, `m`, `s`, got `"g"`/);
    let thrown: unknown;
    try {
      compileSafePattern('a', 'x');
    } catch (error) {
      thrown = error;
    }
    expect(hasErrorCode(thrown, 'invalid_pattern')).toBe(true);
  });
});
