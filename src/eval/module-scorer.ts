/**
 * Scorers written as functions: `{ type: module, module: ./scorers.ts, export: name }`. The
 * module is imported once, on the thread that scores (the main thread), before anything runs.
 */
import { pathToFileURL } from 'node:url';
import { abortReason } from '../abort.ts';
import { UserError } from '../errors.ts';
import { importModule } from '../module-import.ts';
import { clip } from './builtin-scorers.ts';
import { DEFAULT_JUDGE_THRESHOLD, SCORER_FUNCTION_TIMEOUT_MS } from './constants.ts';
import type { ModuleScorerSpec, Score, ScoreInput, ScorerFunction, ScoreValue } from './types.ts';

/**
 * Imports the scorer function of `spec`. Throws UserError `scorer_module` (fields `module`,
 * `export`) when the module cannot be imported or the export is not a function.
 */
export async function loadScorerFunction(spec: ModuleScorerSpec): Promise<ScorerFunction> {
  const name = spec.export ?? 'default';
  let module: Record<string, unknown>;
  try {
    module = await importModule(pathToFileURL(spec.module).href);
  } catch (cause) {
    throw new UserError(
      'scorer_module',
      `Could not import the scorer module ${spec.module} (scorer ${spec.name}): ${String(cause)}`,
      { module: spec.module, export: name },
      { cause },
    );
  }
  const fn = module[name];
  if (typeof fn !== 'function')
    throw new UserError(
      'scorer_module',
      `Expected the export \`${name}\` of ${spec.module} to be a scorer function, got ${typeof fn}`,
      { module: spec.module, export: name },
    );
  return fn as ScorerFunction;
}

/**
 * Calls a scorer function, bounded by `timeoutMs` and by `signal`. Never throws: a throw, a
 * timeout, an abort or a value that is not a score becomes a score with an `error`. A number passes
 * at or above the scorer's `threshold` (0.5); `true`/`false` score 1/0. Not called for an item whose
 * agent failed (`Scoring.score` passes no such item), nor once `signal` has aborted.
 */
export async function callScorerFunction(
  fn: ScorerFunction,
  spec: ModuleScorerSpec,
  input: ScoreInput,
  timeoutMs: number = SCORER_FUNCTION_TIMEOUT_MS,
  signal?: AbortSignal,
): Promise<Score> {
  const interrupted = (): Score => ({
    score: 0,
    pass: false,
    error: clip(`the scorer function did not finish: ${abortReason(signal)}`),
  });
  if (signal?.aborted) return interrupted();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const bounds = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      // A Ctrl-C must not wait out the timeout of a function that never answers.
      onAbort = () => reject(ABORTED);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    const value = await Promise.race([Promise.resolve().then(() => fn(input)), bounds]);
    return toScore(value, spec.threshold ?? DEFAULT_JUDGE_THRESHOLD);
  } catch (cause) {
    if (cause === ABORTED) return interrupted();
    return { score: 0, pass: false, error: clip(failureOf(cause)) };
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}

const ABORTED = Symbol('aborted');

/**
 * What a scorer function's throw says. An Error by its message; any other value (a plain object,
 * one without a prototype, which `String()` cannot convert) as JSON, so `{ code }` is not shown as
 * `[object Object]`.
 */
function failureOf(cause: unknown): string {
  if (cause instanceof Error) return `the scorer function failed: ${cause.message}`;
  if (typeof cause === 'string') return `the scorer function failed: ${cause}`;
  return `the scorer function threw a value that is not an Error: ${describeValue(cause)}`;
}

function describeValue(value: unknown): string {
  try {
    return shownValue(value);
  } catch {
    // A cycle, a BigInt, a throwing toJSON: say what kind of value it was.
    return Object.prototype.toString.call(value);
  }
}

function toScore(value: ScoreValue, threshold: number): Score {
  if (typeof value === 'boolean') return { score: value ? 1 : 0, pass: value };
  if (typeof value === 'number') {
    if (!(value >= 0 && value <= 1)) return invalid(value);
    return { score: value, pass: value >= threshold };
  }
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof value.score === 'number' &&
    value.score >= 0 &&
    value.score <= 1
  ) {
    if (value.pass !== undefined && typeof value.pass !== 'boolean') return invalid(value);
    return {
      score: value.score,
      pass: value.pass ?? value.score >= threshold,
      ...(typeof value.detail === 'string' && value.detail !== '' ? { detail: clip(value.detail) } : {}),
    };
  }
  return invalid(value);
}

/** JSON where JSON says what the value is; NaN, the infinities and undefined by name (JSON has none). */
function shownValue(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return JSON.stringify(value) ?? String(value);
}

function invalid(value: unknown): Score {
  return {
    score: 0,
    pass: false,
    error: clip(
      `expected the scorer function to return a number from 0 to 1, a boolean or { score, pass?, detail? }, got ${shownValue(value)}`,
    ),
  };
}
