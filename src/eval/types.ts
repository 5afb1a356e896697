/**
 * Scoring: what a scorer is declared as (in a plan or from a program), what it is given, and
 * what it gives back. A scorer looks at one finished item of a run (the agent's output, the
 * item's `expected` data) and returns a score between 0 and 1 and a pass/fail verdict.
 */
import type { Usage } from '../providers/types.ts';
import type { JsonSchema } from '../tools/types.ts';

/** Options every scorer declaration has. */
interface ScorerBase {
  /** Name in results and summaries; unique within a plan. @default the scorer's `type` */
  readonly name: string;
  /**
   * JSONPath (RFC 9535) into the item's `expected` data selecting the value this scorer compares
   * with, e.g. `$.verdict`. @default the whole `expected` value
   */
  readonly expectedPath?: string;
  /**
   * JSONPath into the agent's output selecting what is scored. @default the whole output: the
   * `complete_task` result when there is one, else the answer text
   */
  readonly path?: string;
}

/** The output (or the value at `path`) equals the expected value (JSON deep equality). */
export interface ExactScorerSpec extends ScorerBase {
  readonly type: 'exact';
  /** Compare with this value instead of the item's `expected`. */
  readonly value?: unknown;
  /** Compare strings ignoring case. @default false */
  readonly ignoreCase?: boolean;
  /** Compare strings with leading and trailing white space removed. @default false */
  readonly trim?: boolean;
}

/** The value at `path` (required) equals the expected value, or `equals`. */
export interface JsonPathScorerSpec extends ScorerBase {
  readonly type: 'jsonPath';
  readonly path: string;
  /** Compare with this value instead of the item's `expected`. */
  readonly equals?: unknown;
}

/** A pattern (linear-time RE2 syntax) matches the output text somewhere. */
export interface RegexScorerSpec extends ScorerBase {
  readonly type: 'regex';
  /** The pattern; when absent, the item's expected value (a string) is the pattern. */
  readonly pattern?: string;
  /** `i` (ignore case), `m` (multi-line `^`/`$`), `s` (`.` matches newlines), in any order. @default '' */
  readonly flags?: string;
}

/** The output validates against a JSON Schema. */
export interface SchemaScorerSpec extends ScorerBase {
  readonly type: 'schema';
  /** The schema (a mapping, or the boolean schema `true` or `false`); when absent, the item's expected value is the schema. */
  readonly schema?: JsonSchema | boolean;
}

/** The output is a number within a tolerance of the expected number. */
export interface NumericScorerSpec extends ScorerBase {
  readonly type: 'numeric';
  /** Compare with this number instead of the item's `expected`. */
  readonly value?: number;
  /** Absolute tolerance. @default 0 */
  readonly tolerance?: number;
  /** Relative tolerance, a fraction of the expected value's magnitude. @default 0 */
  readonly relativeTolerance?: number;
}

/** The output text contains the expected string (or every string of a list). */
export interface ContainsScorerSpec extends ScorerBase {
  readonly type: 'contains';
  /** The string(s) to look for instead of the item's `expected`. */
  readonly value?: string | readonly string[];
  /** @default false */
  readonly ignoreCase?: boolean;
}

/** An agent grades the output; it runs through the same Supervisor as the run. */
export interface JudgeScorerSpec extends ScorerBase {
  readonly type: 'judge';
  /** Name of the agent definition that grades. */
  readonly agent: string;
  /** Grading instructions added to the judge's task. */
  readonly rubric?: string;
  /** A judge score at or above this passes, unless the judge says `pass` itself. @default 0.5 */
  readonly threshold?: number;
  /** Model for the judge. @default the run's */
  readonly model?: string;
  /** Rounds the judge may take. @default DEFAULT_JUDGE_MAX_STEPS (8) */
  readonly maxSteps?: number;
}

/** A function exported by a module: `(input: ScoreInput) => ScoreValue | Promise<ScoreValue>`. */
export interface ModuleScorerSpec extends ScorerBase {
  readonly type: 'module';
  /** Absolute path (a plan gives it relative to the plan file). */
  readonly module: string;
  /** @default 'default' */
  readonly export?: string;
  /** A function that returns a number alone passes at or above this. @default 0.5 */
  readonly threshold?: number;
}

/** A scorer declaration, as written under `scorers:` in a plan (validated, paths absolute). */
export type ScorerSpec =
  | ExactScorerSpec
  | JsonPathScorerSpec
  | RegexScorerSpec
  | SchemaScorerSpec
  | NumericScorerSpec
  | ContainsScorerSpec
  | JudgeScorerSpec
  | ModuleScorerSpec;

/** The kinds of scorer. */
export type ScorerType = ScorerSpec['type'];

/** One finished item to score. */
export interface ScoreInput {
  /** Plan position of the item. */
  readonly index: number;
  /** The item's `id` in the plan or tasks file, when it has one. */
  readonly id?: string;
  readonly task: string;
  readonly context: readonly string[];
  /** The item's `expected` data; undefined when it has none. */
  readonly expected?: unknown;
  /** How the agent ended. */
  readonly status: 'completed' | 'failed';
  /** The `complete_task` result, or the answer text when there is none (undefined when it failed). */
  readonly output: unknown;
  /** Why the agent failed (`step_limit: ...`) when `status` is `failed`. */
  readonly failure?: string;
  /** The answer text (the JSON of the result when it finished through `complete_task`). */
  readonly answer?: string;
  /** Agent id of the attempt being scored. */
  readonly agentId: string;
}

/** What a scorer function may return: a score in [0, 1], a verdict, or both with a detail. */
export type ScoreValue =
  | number
  | boolean
  | { readonly score: number; readonly pass?: boolean; readonly detail?: string };

/** A scorer exported by a module. */
export type ScorerFunction = (input: ScoreInput) => ScoreValue | Promise<ScoreValue>;

/** One scorer's verdict on one item. */
export interface Score {
  /** Between 0 and 1. */
  readonly score: number;
  readonly pass: boolean;
  /** Why, in a line: what differed, what the judge said. */
  readonly detail?: string;
  /**
   * The scorer could not score the item (the agent failed, the expected value is missing, the
   * judge failed, the scorer function threw): score 0, not passed.
   */
  readonly error?: string;
  /** The judge agent's id, usage and cost (judge scorers only). */
  readonly judge?: {
    readonly agentId: string;
    readonly usage: Usage;
    /** USD; null when the judge's model has no known price. */
    readonly costUsd: number | null;
  };
}

/** Every scorer's verdict on one item, by scorer name. */
export type ItemScores = Readonly<Record<string, Score>>;

/** One scorer over a whole run. */
export interface ScorerTotals {
  readonly type: ScorerType;
  /** Items counted: every plan entry (an entry with no result counts as not passed). */
  readonly items: number;
  readonly passed: number;
  /** Items the scorer could not score (counted as not passed, score 0). */
  readonly errors: number;
  /** Items with no score from this scorer: not run yet, or scored before the scorer was declared. */
  readonly notScored: number;
  /** passed / items (0 when there are no items). */
  readonly passRate: number;
  /** Mean score over the items. */
  readonly meanScore: number;
  /** What the judge agents used and cost (judge scorers only). */
  readonly judgeUsage?: Usage;
  /** USD spent by judges; null when any judge's cost is unknown. */
  readonly judgeCostUsd?: number | null;
}

/** One item's scores in a summary. */
export interface ItemScoreSummary {
  readonly index: number;
  readonly id?: string;
  readonly agentId: string | null;
  /** By scorer name: the score, `pass`, why (`detail`), and the error when it could not be scored. */
  readonly scores: Readonly<Record<string, Omit<Score, 'judge'>>>;
}

/** The scoring part of a run's summary. */
export interface ScoringSummary {
  /** By scorer name, in declaration order. */
  readonly scorers: Readonly<Record<string, ScorerTotals>>;
  /** Every plan entry, in plan order. */
  readonly items: readonly ItemScoreSummary[];
}
