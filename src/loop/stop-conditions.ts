/**
 * Loop termination as a small set of composable conditions, checked before every round, instead of
 * flags spread through the loop.
 */
import type { FailureReason } from './types.ts';

/** What a stop condition sees: the agent's progress so far. */
export interface LoopProgress {
  /** Rounds that reached the provider. */
  readonly roundsUsed: number;
  readonly totalTokens: number;
  readonly costUsd: number;
  readonly elapsedMs: number;
  /** Canonical names of tools that have succeeded at least once. */
  readonly succeededTools: ReadonlySet<string>;
}

/** A condition's verdict: finish successfully, or fail with a reason. */
export type StopVerdict =
  | { readonly kind: 'complete'; readonly answer: string }
  | {
      readonly kind: 'fail';
      readonly reason: FailureReason;
      readonly code: string;
      readonly message: string;
    };

/** Returns a verdict to stop, or undefined to go on. */
export type StopCondition = (progress: LoopProgress) => StopVerdict | undefined;

/** Fails with `round_limit` once `maxRounds` rounds have run. */
export function stepCount(maxRounds: number): StopCondition {
  return (progress) =>
    progress.roundsUsed >= maxRounds
      ? {
          kind: 'fail',
          reason: 'round_limit',
          code: 'round_limit',
          message: `The agent used all ${maxRounds} rounds without finishing`,
        }
      : undefined;
}

/** Completes once `tool` has succeeded (for agents whose work ends with a known tool). */
export function toolCalled(tool: string): StopCondition {
  return (progress) =>
    progress.succeededTools.has(tool) ? { kind: 'complete', answer: `${tool} succeeded` } : undefined;
}

/** Fails when a token, cost or wall-clock budget is spent. */
export function budget(limits: {
  readonly maxTotalTokens?: number;
  readonly maxCostUsd?: number;
  readonly wallClockMs?: number;
}): StopCondition {
  return (progress) => {
    if (limits.maxTotalTokens !== undefined && progress.totalTokens >= limits.maxTotalTokens) {
      return {
        kind: 'fail',
        reason: 'budget',
        code: 'token_budget',
        message: `The agent used ${progress.totalTokens} tokens, its budget is ${limits.maxTotalTokens}`,
      };
    }
    if (limits.maxCostUsd !== undefined && progress.costUsd >= limits.maxCostUsd) {
      return {
        kind: 'fail',
        reason: 'budget',
        code: 'cost_budget',
        message: `The agent spent $${progress.costUsd.toFixed(4)}, its budget is $${limits.maxCostUsd}`,
      };
    }
    if (limits.wallClockMs !== undefined && progress.elapsedMs >= limits.wallClockMs) {
      return {
        kind: 'fail',
        reason: 'timeout',
        code: 'wall_clock',
        message: `The agent ran for ${Math.round(progress.elapsedMs)} ms, its limit is ${limits.wallClockMs} ms`,
      };
    }
    return undefined;
  };
}

/** The first verdict of `conditions`, in order. */
export function firstVerdict(
  conditions: readonly StopCondition[],
  progress: LoopProgress,
): StopVerdict | undefined {
  for (const condition of conditions) {
    const verdict = condition(progress);
    if (verdict) return verdict;
  }
  return undefined;
}
