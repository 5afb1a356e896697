/**
 * Loop termination as a small set of composable conditions, checked before every model request
 * (the first of a round and every continuation inside it), instead of flags spread through the loop.
 */
import type { FailureReason } from './types.ts';

/** What a stop condition sees: the agent's progress so far. */
export interface LoopProgress {
  /** Model requests sent (steps). */
  readonly stepsUsed: number;
  /** Rounds that reached the provider. */
  readonly roundsUsed: number;
  /** Input + output tokens, estimated ones included. */
  readonly totalTokens: number;
  /** USD of the requests whose price is known. */
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

/** Fails with `step_limit` once `maxSteps` model requests have been made. */
export function stepCount(maxSteps: number): StopCondition {
  return (progress) =>
    progress.stepsUsed >= maxSteps
      ? {
          kind: 'fail',
          reason: 'step_limit',
          code: 'step_limit',
          message: `The agent made all ${maxSteps} model requests (maxSteps) without finishing`,
        }
      : undefined;
}

/** Completes once `tool` has succeeded (for agents whose work ends with a known tool). */
export function toolCalled(tool: string): StopCondition {
  return (progress) =>
    progress.succeededTools.has(tool) ? { kind: 'complete', answer: `${tool} succeeded` } : undefined;
}

/** Fails when a token, cost or wall-clock budget is spent. A budget of 0 (or none) is unlimited. */
export function budget(limits: {
  readonly maxTotalTokens?: number;
  readonly maxCostUsd?: number;
  readonly wallClockMs?: number;
}): StopCondition {
  return (progress) => {
    if (isSet(limits.maxTotalTokens) && progress.totalTokens >= limits.maxTotalTokens) {
      return {
        kind: 'fail',
        reason: 'budget',
        code: 'token_budget',
        message: `The agent used ${progress.totalTokens} tokens, its budget (maxTotalTokens) is ${limits.maxTotalTokens}`,
      };
    }
    if (isSet(limits.maxCostUsd) && progress.costUsd >= limits.maxCostUsd) {
      return {
        kind: 'fail',
        reason: 'budget',
        code: 'cost_budget',
        message: `The agent spent $${progress.costUsd.toFixed(4)}, its budget (maxCostUsd) is $${limits.maxCostUsd}`,
      };
    }
    if (isSet(limits.wallClockMs) && progress.elapsedMs >= limits.wallClockMs) {
      return {
        kind: 'fail',
        reason: 'timeout',
        code: 'wall_clock',
        message: `The agent ran for ${Math.round(progress.elapsedMs)} ms, its limit (wallClockMs) is ${limits.wallClockMs} ms`,
      };
    }
    return undefined;
  };
}

function isSet(value: number | undefined): value is number {
  return value !== undefined && value > 0;
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
