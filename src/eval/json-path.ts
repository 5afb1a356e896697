/**
 * JSONPath (RFC 9535) for scorers, through jsonpath-rfc9535 (it passes the JSONPath compliance
 * suite). The standard's `match()` and `search()` filter functions run I-Regexp patterns with
 * JavaScript's backtracking RegExp, which a pattern like `(a+)+$` can hang on model output; they
 * are refused here (use a `regex` scorer, which runs in linear time).
 */
import { query } from 'jsonpath-rfc9535';
import parse from 'jsonpath-rfc9535/parser';
import { describeValue, UserError } from '../errors.ts';
import { MAX_JSON_PATH_CHARS } from './constants.ts';

/** A compiled JSONPath: the values it selects in a JSON value, in document order. */
export type JsonPathQuery = (value: unknown) => unknown[];

const REGEX_FUNCTIONS = new Set(['match', 'search']);

/** Why `expression` is not an accepted JSONPath, or undefined when it is. */
export function jsonPathProblem(expression: unknown): string | undefined {
  if (typeof expression !== 'string' || expression.trim() === '')
    return `expected a JSONPath such as \`$.verdict\`, got ${describeValue(expression)}`;
  if (expression.length > MAX_JSON_PATH_CHARS)
    return `expected a JSONPath of at most ${MAX_JSON_PATH_CHARS} characters, got ${expression.length}`;
  let ast: unknown;
  try {
    ast = parse(expression);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `expected a JSONPath (RFC 9535) such as \`$.verdict\`, got ${describeValue(expression)}: ${reason}`;
  }
  const refused = findRegexFunction(ast);
  if (refused !== undefined)
    return `the JSONPath function \`${refused}()\` is not supported (its pattern would run with a backtracking engine); use a \`regex\` scorer instead`;
  return undefined;
}

/** Compiles `expression`. Throws UserError `invalid_json_path` (field `expression`) when it is not accepted. */
export function compileJsonPath(expression: string): JsonPathQuery {
  const problem = jsonPathProblem(expression);
  if (problem !== undefined)
    throw new UserError('invalid_json_path', `Invalid JSONPath: ${problem}`, { expression });
  return (value) => (isJson(value) ? query(value as Parameters<typeof query>[0], expression) : []);
}

function findRegexFunction(node: unknown): string | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const found = findRegexFunction(item);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof node !== 'object' || node === null) return undefined;
  const record = node as Record<string, unknown>;
  if (record.type === 'FunctionExpr' && typeof record.name === 'string' && REGEX_FUNCTIONS.has(record.name))
    return record.name;
  for (const value of Object.values(record)) {
    const found = findRegexFunction(value);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Values a JSONPath can walk: plain JSON (undefined and functions are not). */
function isJson(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}
