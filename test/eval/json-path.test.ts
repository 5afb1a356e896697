import { describe, expect, it } from 'vitest';
import { compileJsonPath, jsonPathProblem } from '../../src/eval/json-path.ts';

describe('compileJsonPath', () => {
  it('selects values with RFC 9535 JSONPath', () => {
    const value = { verdict: 'pass', issues: [{ line: 3 }, { line: 9 }] };
    expect(compileJsonPath('$.verdict')(value)).toEqual(['pass']);
    expect(compileJsonPath('$.issues[*].line')(value)).toEqual([3, 9]);
    expect(compileJsonPath('$.issues[?@.line > 4].line')(value)).toEqual([9]);
    expect(compileJsonPath('$.missing')(value)).toEqual([]);
    expect(compileJsonPath('$')('plain text')).toEqual(['plain text']);
  });

  it('refuses match() and search(), whose patterns run on a backtracking engine', () => {
    expect(jsonPathProblem('$[?match(@.a, "(a+)+")]')).toMatch(
      /`match\(\)` is not supported.*use a `regex` scorer/,
    );
    expect(jsonPathProblem('$.x[?search(@, "b")]')).toMatch(/`search\(\)` is not supported/);
    expect(() => compileJsonPath('$[?match(@, "a")]')).toThrow(
      expect.objectContaining({ code: 'invalid_json_path' }),
    );
  });

  it('reports a syntax error with the expression', () => {
    expect(jsonPathProblem('$.a[')).toMatch(
      /^expected a JSONPath \(RFC 9535\) such as `\$.verdict`, got `"\$.a\["` \(string\): /,
    );
    expect(jsonPathProblem('verdict')).toMatch(/expected a JSONPath/);
    expect(jsonPathProblem('$.'.padEnd(1001, 'a'))).toMatch(/at most 1000 characters/);
  });
});
