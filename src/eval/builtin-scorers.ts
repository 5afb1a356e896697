/**
 * The deterministic scorers: `exact`, `jsonPath`, `regex`, `schema`, `numeric` and `contains`.
 * Each is compiled once from its declaration (patterns, paths and schemas are checked then) and
 * scores an item synchronously.
 */
import { canonicalJson } from '../journal/canonical-json.ts';
import { compileSchema, describeProblems, isSchema, type SchemaValidator } from '../tools/schema.ts';
import { SCORE_DETAIL_MAX_CHARS } from './constants.ts';
import { compileJsonPath, type JsonPathQuery } from './json-path.ts';
import { compileSafePattern, type SafePattern } from './safe-regex.ts';
import type {
  ContainsScorerSpec,
  ExactScorerSpec,
  JsonPathScorerSpec,
  NumericScorerSpec,
  RegexScorerSpec,
  SchemaScorerSpec,
  Score,
  ScoreInput,
} from './types.ts';

/** A deterministic scorer, ready to score items. */
export type SyncScorer = (input: ScoreInput) => Score;

/** A built-in deterministic scorer declaration. */
export type BuiltinScorerSpec =
  | ExactScorerSpec
  | JsonPathScorerSpec
  | RegexScorerSpec
  | SchemaScorerSpec
  | NumericScorerSpec
  | ContainsScorerSpec;

/** What a scorer compares: the selected output and the expected value, or why it cannot. */
type Operands = { readonly output: unknown; readonly expected: unknown } | { readonly score: Score };

/** Compiles a built-in scorer. Throws the UserErrors of its patterns, paths and schema when invalid. */
export function compileBuiltinScorer(spec: BuiltinScorerSpec): SyncScorer {
  const selectOutput = spec.path === undefined ? undefined : compileJsonPath(spec.path);
  const selectExpected = spec.expectedPath === undefined ? undefined : compileJsonPath(spec.expectedPath);
  const constant = constantOf(spec);
  const operands = (input: ScoreInput, needsExpected = true): Operands => {
    const output = select(input.output, selectOutput, spec.path);
    if ('score' in output) return output;
    if (!needsExpected) return { output: output.value, expected: undefined };
    if (constant !== undefined) return { output: output.value, expected: constant.value };
    if (input.expected === undefined)
      return { score: error('the item has no `expected` value (and the scorer gives none)') };
    if (selectExpected === undefined) return { output: output.value, expected: input.expected };
    const found = selectExpected(input.expected);
    if (found.length === 0)
      return { score: error(`the item's \`expected\` has nothing at ${spec.expectedPath ?? ''}`) };
    return { output: output.value, expected: found.length === 1 ? found[0] : found };
  };
  switch (spec.type) {
    case 'exact':
    case 'jsonPath': {
      const normalize = (value: unknown): unknown => {
        if (typeof value !== 'string' || spec.type !== 'exact') return value;
        let text = spec.trim ? value.trim() : value;
        if (spec.ignoreCase) text = text.toLowerCase();
        return text;
      };
      return (input) => {
        const pair = operands(input);
        if ('score' in pair) return pair.score;
        const same =
          canonicalJson(normalize(pair.output) ?? null) === canonicalJson(normalize(pair.expected) ?? null);
        return same ? pass() : fail(`expected ${shown(pair.expected)}, got ${shown(pair.output)}`);
      };
    }
    case 'regex': {
      const fixed =
        spec.pattern === undefined ? undefined : compileSafePattern(spec.pattern, spec.flags ?? '');
      return (input) => {
        const pair = operands(input, fixed === undefined);
        if ('score' in pair) return pair.score;
        let pattern: SafePattern;
        if (fixed !== undefined) pattern = fixed;
        else {
          if (typeof pair.expected !== 'string')
            return error(`expected a pattern as the expected value, got ${shown(pair.expected)}`);
          try {
            pattern = compileSafePattern(pair.expected, spec.flags ?? '');
          } catch (cause) {
            return error(cause instanceof Error ? cause.message : String(cause));
          }
        }
        const text = textOf(pair.output);
        return pattern.test(text)
          ? pass()
          : fail(`/${pattern.source}/${pattern.flags} does not match ${shown(text)}`);
      };
    }
    case 'schema': {
      const fixed = spec.schema === undefined ? undefined : compileSchema(spec.schema, `scorer ${spec.name}`);
      return (input) => {
        const pair = operands(input, fixed === undefined);
        if ('score' in pair) return pair.score;
        let validate: SchemaValidator;
        if (fixed !== undefined) validate = fixed;
        else {
          if (!isSchema(pair.expected))
            return error(`expected a JSON Schema as the expected value, got ${shown(pair.expected)}`);
          try {
            validate = compileSchema(pair.expected, `the expected schema of item ${input.index}`);
          } catch (cause) {
            return error(cause instanceof Error ? cause.message : String(cause));
          }
        }
        const problems = validate(pair.output);
        return problems.length === 0 ? pass() : fail(describeProblems(problems));
      };
    }
    case 'numeric':
      return (input) => {
        const pair = operands(input);
        if ('score' in pair) return pair.score;
        const want = numberOf(pair.expected);
        if (want === undefined)
          return error(`expected a number as the expected value, got ${shown(pair.expected)}`);
        const got = numberOf(pair.output);
        if (got === undefined) return fail(`expected a number, got ${shown(pair.output)}`);
        const allowed = Math.max(spec.tolerance ?? 0, (spec.relativeTolerance ?? 0) * Math.abs(want));
        const difference = Math.abs(got - want);
        return difference <= allowed
          ? pass()
          : fail(`expected ${want}${allowed > 0 ? ` ± ${allowed}` : ''}, got ${got} (off by ${difference})`);
      };
    case 'contains':
      return (input) => {
        const pair = operands(input);
        if ('score' in pair) return pair.score;
        const wanted = typeof pair.expected === 'string' ? [pair.expected] : pair.expected;
        if (
          !Array.isArray(wanted) ||
          wanted.length === 0 ||
          !wanted.every((item) => typeof item === 'string')
        )
          return error(
            `expected a string or a list of strings as the expected value, got ${shown(pair.expected)}`,
          );
        const fold = (text: string): string => (spec.ignoreCase ? text.toLowerCase() : text);
        const text = fold(textOf(pair.output));
        const missing = (wanted as string[]).filter((item) => !text.includes(fold(item)));
        const score = (wanted.length - missing.length) / wanted.length;
        return missing.length === 0
          ? pass()
          : { score, pass: false, detail: clip(`missing ${missing.map((item) => shown(item)).join(', ')}`) };
      };
  }
}

function constantOf(spec: BuiltinScorerSpec): { value: unknown } | undefined {
  switch (spec.type) {
    case 'jsonPath':
      return spec.equals === undefined ? undefined : { value: spec.equals };
    case 'exact':
    case 'numeric':
    case 'contains':
      return spec.value === undefined ? undefined : { value: spec.value };
    default:
      return undefined;
  }
}

function select(
  output: unknown,
  query: JsonPathQuery | undefined,
  path: string | undefined,
): { value: unknown } | { score: Score } {
  if (query === undefined) return { value: output };
  const found = query(output);
  if (found.length === 0) return { score: fail(`${path ?? ''} selects nothing in the output`) };
  return { value: found.length === 1 ? found[0] : found };
}

/** A value as text for `regex` and `contains`: strings as they are, anything else as JSON. */
export function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value) ?? '';
}

const NUMBER_TEXT = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

/** A number, or a string that is exactly one (white space around it allowed). */
function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  return NUMBER_TEXT.test(text) ? Number(text) : undefined;
}

function pass(): Score {
  return { score: 1, pass: true };
}

function fail(detail: string): Score {
  return { score: 0, pass: false, detail: clip(detail) };
}

function error(message: string): Score {
  return { score: 0, pass: false, error: clip(message) };
}

/** A value in a detail line: JSON, cut to a readable length. */
function shown(value: unknown): string {
  const text = value === undefined ? 'nothing' : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** Cuts a detail to {@link SCORE_DETAIL_MAX_CHARS}. */
export function clip(text: string): string {
  return text.length > SCORE_DETAIL_MAX_CHARS ? `${text.slice(0, SCORE_DETAIL_MAX_CHARS - 1)}…` : text;
}
