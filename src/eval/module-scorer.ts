/**
 * Scorers written as functions: `{ type: module, module: ./scorers.ts, export: name }`. The
 * module is imported once, on the thread that scores (the main thread), before anything runs.
 */
import { pathToFileURL } from 'node:url';
import PQueue from 'p-queue';
import { abortReason } from '../abort.ts';
import { UserError } from '../errors.ts';
import { importModule } from '../module-import.ts';
import { clip } from './builtin-scorers.ts';
import {
  DEFAULT_JUDGE_THRESHOLD,
  DEFAULT_SCORER_FUNCTION_CONCURRENCY,
  SCORER_FUNCTION_MAX_TIMEOUTS_IN_A_ROW,
  SCORER_FUNCTION_TIMEOUT_MS,
} from './constants.ts';
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

/** How {@link ScorerFunctionCalls} calls a function. */
export interface ScorerFunctionCallOptions {
  /** Calls running at once. @default DEFAULT_SCORER_FUNCTION_CONCURRENCY (8) */
  readonly concurrency?: number;
  /** Time a call gets, from its start. @default SCORER_FUNCTION_TIMEOUT_MS (60 s) */
  readonly timeoutMs?: number;
  /** Aborting it answers running and waiting calls at once. */
  readonly signal?: AbortSignal;
}

/**
 * The calls of one scorer function: at most `concurrency` at once, each bounded by `timeoutMs`
 * and by `signal`. After {@link SCORER_FUNCTION_MAX_TIMEOUTS_IN_A_ROW} calls in a row got no
 * answer, the function is not called again: the items waiting would otherwise each wait out the
 * timeout in turn (20,000 items, 16 at a time, 60 s each: 21 hours).
 */
export class ScorerFunctionCalls {
  readonly #fn: ScorerFunction;
  readonly #spec: ModuleScorerSpec;
  readonly #timeoutMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #queue: PQueue;
  /** Rejects with ABORTED when the signal aborts: one listener for all calls, not one per call. */
  readonly #aborted: Promise<never> | undefined;
  #timeoutsInARow = 0;

  constructor(fn: ScorerFunction, spec: ModuleScorerSpec, options: ScorerFunctionCallOptions = {}) {
    this.#fn = fn;
    this.#spec = spec;
    this.#timeoutMs = options.timeoutMs ?? SCORER_FUNCTION_TIMEOUT_MS;
    this.#signal = options.signal;
    this.#queue = new PQueue({ concurrency: options.concurrency ?? DEFAULT_SCORER_FUNCTION_CONCURRENCY });
    this.#aborted = abortedPromise(options.signal);
  }

  /** Scores one item. Never throws: a failed call is a score with an `error`. */
  call(input: ScoreInput): Promise<Score> {
    return this.#queue.add(async (): Promise<Score> => {
      if (this.#timeoutsInARow >= SCORER_FUNCTION_MAX_TIMEOUTS_IN_A_ROW)
        return {
          score: 0,
          pass: false,
          error: `the scorer function was not called: its last ${this.#timeoutsInARow} calls got no answer within ${this.#timeoutMs} ms (troupe score RUN_DIR scores again)`,
        };
      const { score, timedOut } = await callOnce(
        this.#fn,
        this.#spec,
        input,
        this.#timeoutMs,
        this.#signal,
        this.#aborted,
      );
      this.#timeoutsInARow = timedOut ? this.#timeoutsInARow + 1 : 0;
      return score;
    }) as Promise<Score>;
  }
}

/** A promise that rejects with ABORTED once `signal` aborts (never settles without one). */
function abortedPromise(signal: AbortSignal | undefined): Promise<never> | undefined {
  if (signal === undefined) return undefined;
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(ABORTED);
    else signal.addEventListener('abort', () => reject(ABORTED), { once: true });
  });
  aborted.catch(() => {});
  return aborted;
}

/**
 * Calls a scorer function once, bounded by `timeoutMs` and by `aborted` (the signal's rejection).
 * Never throws: a throw, a timeout, an abort or a value that is not a score becomes a score with an
 * `error`. A number passes at or above the scorer's `threshold` (0.5); `true`/`false` score 1/0. Not
 * called for an item whose agent failed (`Scoring.score` passes no such item), nor once `signal` has
 * aborted.
 */
async function callOnce(
  fn: ScorerFunction,
  spec: ModuleScorerSpec,
  input: ScoreInput,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  aborted: Promise<never> | undefined,
): Promise<{ score: Score; timedOut: boolean }> {
  const interrupted = (): { score: Score; timedOut: boolean } => ({
    score: {
      score: 0,
      pass: false,
      error: clip(`the scorer function did not finish: ${abortReason(signal)}`),
    },
    timedOut: false,
  });
  if (signal?.aborted) return interrupted();
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimedOut(timeoutMs)), timeoutMs);
    });
    // A Ctrl-C must not wait out the timeout of a function that never answers.
    const bounds = aborted === undefined ? [timeout] : [timeout, aborted];
    const value = await Promise.race([Promise.resolve().then(() => fn(input)), ...bounds]);
    return { score: toScore(value, spec.threshold ?? DEFAULT_JUDGE_THRESHOLD), timedOut: false };
  } catch (cause) {
    if (cause === ABORTED) return interrupted();
    return {
      score: { score: 0, pass: false, error: clip(failureOf(cause)) },
      timedOut: cause instanceof TimedOut,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The timeout of one call (an Error: its message is the score's). */
class TimedOut extends Error {
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
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
