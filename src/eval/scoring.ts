/**
 * A set of scorers ready to score items: built-in scorers compiled, scorer modules imported, judge
 * definitions resolved. {@link Scoring.score} scores one item with every scorer; judges run
 * through the given spawner (the run's Supervisor), at most `judgeConcurrency` at once.
 */
import PQueue from 'p-queue';
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import { timeLimit } from '../option-checks.ts';
import { type BuiltinScorerSpec, clip, compileBuiltinScorer } from './builtin-scorers.ts';
import {
  DEFAULT_JUDGE_CONCURRENCY,
  DEFAULT_SCORER_FUNCTION_CONCURRENCY,
  SCORER_FUNCTION_TIMEOUT_MS,
} from './constants.ts';
import { type JudgeSpawner, runJudge } from './judge.ts';
import { loadScorerFunction, ScorerFunctionCalls } from './module-scorer.ts';
import { prepareScorers } from './spec.ts';
import type { ItemScores, Score, ScoreInput, ScorerSpec } from './types.ts';

/** Options of {@link Scoring.create}. */
export interface ScoringOptions {
  /** Scorer declarations (validated again here). */
  readonly scorers: readonly ScorerSpec[];
  /** Runs judge agents; required when a `judge` scorer is declared. A `Supervisor` is one. */
  readonly spawner?: JudgeSpawner;
  /**
   * Finds a judge's definition by name, so one without an `outputSchema` can be given the judge
   * schema. When it returns undefined the judge is spawned by name.
   */
  readonly resolveAgent?: (
    name: string,
  ) => AgentDefinition | undefined | Promise<AgentDefinition | undefined>;
  /** Provider name judges run with. @default the spawner's default */
  readonly provider?: string;
  /** Model judges run with unless their scorer names one. @default the definition's */
  readonly model?: string;
  /** Added to judge agent ids, e.g. `-s2` when a run is scored again. @default '' */
  readonly judgeIdSuffix?: string;
  /** Judge agents running at once. @default DEFAULT_JUDGE_CONCURRENCY (8) */
  readonly judgeConcurrency?: number;
  /**
   * Calls of each scorer function running at once; the others wait their turn, and the time a call
   * gets counts from its start. @default DEFAULT_SCORER_FUNCTION_CONCURRENCY (8)
   */
  readonly functionConcurrency?: number;
  /**
   * Time a scorer function gets per item: a positive integer up to 2147483647 (`MAX_TIMER_MS`;
   * Node fires a longer timer at once). @default SCORER_FUNCTION_TIMEOUT_MS (60 s)
   */
  readonly functionTimeoutMs?: number;
  /**
   * Aborting it cancels running judges and stops waiting for scorer functions (their scores get an
   * `error`); a scorer function is not called for an item scored after it.
   */
  readonly signal?: AbortSignal;
}

type ItemScorer = (input: ScoreInput) => Promise<Score>;

/** Scores items with a fixed set of scorers. */
export class Scoring {
  readonly #scorers: readonly { readonly name: string; readonly run: ItemScorer }[];
  readonly scorers: readonly ScorerSpec[];

  private constructor(scorers: readonly ScorerSpec[], runners: readonly { name: string; run: ItemScorer }[]) {
    this.scorers = scorers;
    this.#scorers = runners;
  }

  /**
   * Prepares `options.scorers`. Throws UserError `invalid_option` for a bad `functionTimeoutMs`,
   * `invalid_scorers` for a bad declaration,
   * `scorer_module` for a module that does not export a function, and `judge_needs_spawner` when a
   * judge is declared without a spawner.
   *
   * @example
   * ```ts
   * const scoring = await Scoring.create({
   *   scorers: [{ name: 'verdict', type: 'jsonPath', path: '$.verdict' }],
   * });
   * const scores = await scoring.score({ index: 0, task, context: [], expected: 'pass',
   *   status: 'completed', output: { verdict: 'pass' }, agentId: 'a-0' });
   * ```
   */
  static async create(options: ScoringOptions): Promise<Scoring> {
    const specs = prepareScorers(options.scorers);
    const functionTimeoutMs = timeLimit(
      'functionTimeoutMs',
      options.functionTimeoutMs,
      SCORER_FUNCTION_TIMEOUT_MS,
      'positive integer',
    );
    const queue = new PQueue({ concurrency: options.judgeConcurrency ?? DEFAULT_JUDGE_CONCURRENCY });
    const runners: { name: string; run: ItemScorer }[] = [];
    for (const spec of specs) {
      switch (spec.type) {
        case 'judge': {
          const spawner = options.spawner;
          if (spawner === undefined)
            throw new UserError(
              'judge_needs_spawner',
              `The judge scorer ${spec.name} needs a Supervisor (or another spawner) to run its agent ${spec.agent}`,
              { scorer: spec.name },
            );
          const definition = await options.resolveAgent?.(spec.agent);
          const run: ItemScorer = (input) =>
            queue.add(() =>
              runJudge(spec, input, {
                spawner,
                ...(definition === undefined ? {} : { definition }),
                ...(options.provider === undefined ? {} : { provider: options.provider }),
                ...(options.model === undefined ? {} : { model: options.model }),
                ...(options.judgeIdSuffix === undefined ? {} : { idSuffix: options.judgeIdSuffix }),
                ...(options.signal === undefined ? {} : { signal: options.signal }),
              }),
            ) as Promise<Score>;
          runners.push({ name: spec.name, run });
          break;
        }
        case 'module': {
          const fn = await loadScorerFunction(spec);
          const calls = new ScorerFunctionCalls(fn, spec, {
            timeoutMs: functionTimeoutMs,
            concurrency: options.functionConcurrency ?? DEFAULT_SCORER_FUNCTION_CONCURRENCY,
            ...(options.signal === undefined ? {} : { signal: options.signal }),
          });
          runners.push({ name: spec.name, run: (input) => calls.call(input) });
          break;
        }
        default: {
          const scorer = compileBuiltinScorer(spec as BuiltinScorerSpec);
          runners.push({ name: spec.name, run: async (input) => scorer(input) });
        }
      }
    }
    return new Scoring(specs, runners);
  }

  /** True when a scorer runs an agent. */
  get hasJudges(): boolean {
    return this.scorers.some((spec) => spec.type === 'judge');
  }

  /**
   * Scores one item with every scorer. Never rejects: a scorer that cannot score gives an `error`.
   * An item whose agent failed is passed by no scorer (score 0, `detail: the agent failed
   * (reason)`), and none is run for it: no judge is spawned, no scorer function called.
   */
  async score(input: ScoreInput): Promise<ItemScores> {
    if (input.status === 'failed') {
      const failed: Score = {
        score: 0,
        pass: false,
        detail: clip(`the agent failed${input.failure ? ` (${input.failure})` : ''}`),
      };
      return Object.fromEntries(this.#scorers.map(({ name }) => [name, failed]));
    }
    const scores = await Promise.all(
      this.#scorers.map(async ({ name, run }): Promise<[string, Score]> => {
        try {
          return [name, await run(input)];
        } catch (cause) {
          return [
            name,
            {
              score: 0,
              pass: false,
              error: `the scorer failed: ${cause instanceof Error ? cause.message : String(cause)}`,
            },
          ];
        }
      }),
    );
    return Object.fromEntries(scores);
  }
}
