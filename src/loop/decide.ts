/**
 * The loop's decisions as values: whether another model request may be sent now
 * ({@link limitVerdict}), and what follows a round ({@link decideNext}). Both are free of side
 * effects, so they can be tested without a provider.
 */

import type { RetryPolicy } from '../definition/types.ts';
import type { SerializedError } from '../errors.ts';
import { backoffDelay } from '../tools/retry.ts';
import type { RunContext } from './context.ts';
import type { PendingCapture, RoundResult } from './round.ts';
import { firstVerdict } from './stop-conditions.ts';
import { WallClockExceeded } from './tool-calls.ts';
import type { FailureReason } from './types.ts';

/** The agent ends. */
export type Ending =
  | { readonly kind: 'fail'; readonly reason: FailureReason; readonly error: SerializedError }
  | { readonly kind: 'complete'; readonly answer: string; readonly result: unknown };

/** What the loop does after a round. */
export type NextStep =
  | Ending
  | {
      readonly kind: 'again';
      /** Run the next round as this capture turn. */
      readonly capture?: PendingCapture;
      /**
       * Push the completion reminder, wait `delayMs`, and force the tool when `forceTool`; `misses`
       * counts the turns that ended without the required tool so far.
       */
      readonly remind?: { readonly delayMs: number; readonly forceTool: boolean; readonly misses: number };
      /** Ask the model to continue an answer cut off by its output limit. */
      readonly continueTruncated?: boolean;
    };

/**
 * Why no further model request may be sent now, or undefined when one may: cancellation, the time
 * limit, the stop conditions (steps, tokens, cost, the caller's), or an input that no longer fits.
 * Checked before every request, the first of a round and every continuation inside it.
 */
export function limitVerdict(run: RunContext): Ending | undefined {
  if (run.signal.aborted) return abortEnding(run);
  const verdict = firstVerdict(run.conditions, run.progress());
  if (verdict?.kind === 'fail') {
    return { kind: 'fail', reason: verdict.reason, error: failure(verdict.code, verdict.message) };
  }
  if (verdict?.kind === 'complete') return { kind: 'complete', answer: verdict.answer, result: undefined };
  if (run.renderBudget <= 0) return fixedInputTooLarge(run);
  if (!run.projection.fits(run.renderBudget)) {
    return {
      kind: 'fail',
      reason: 'budget',
      error: failure(
        'context_budget',
        `The input (${run.projection.estimatedTokens()} tokens) no longer fits the budget of ${run.renderBudget}`,
      ),
    };
  }
  return undefined;
}

/**
 * The system prompt and the tool schemas alone leave no room for the projection (a huge definition
 * body, or an MCP server listing a multi-megabyte schema): the budget left for the rest is zero or
 * less, which the projection would have refused as an invalid option (`maxInputTokens` must be a
 * positive number) instead of saying what does not fit.
 */
function fixedInputTooLarge(run: RunContext): Ending {
  let largest = '';
  let largestChars = 0;
  for (const spec of run.toolbox.specs) {
    const chars = JSON.stringify(spec).length;
    if (chars > largestChars) {
      largest = spec.name;
      largestChars = chars;
    }
  }
  const tool =
    largest === '' ? '' : `; the largest tool definition is \`${largest}\` (${largestChars} characters)`;
  return {
    kind: 'fail',
    reason: 'budget',
    error: failure(
      'context_budget',
      `The system prompt (${run.system.length} characters) and the tool definitions leave no room for the task and the history: they take the whole input budget and ${-run.renderBudget} tokens more${tool}`,
    ),
  };
}

/** Why the run's signal aborted: the time limit (`timeout`) or a cancellation. */
export function abortEnding(run: RunContext, error?: SerializedError): Ending {
  const reason: unknown = run.signal.reason;
  if (run.timedOut || reason instanceof WallClockExceeded) {
    const limitMs = reason instanceof WallClockExceeded ? reason.limitMs : run.limits.wallClockMs;
    return {
      kind: 'fail',
      reason: 'timeout',
      error: failure(
        'wall_clock',
        `The agent ran out of time: its limit (wallClockMs) is ${limitMs} ms; the request and tool in flight were aborted`,
      ),
    };
  }
  return { kind: 'fail', reason: 'cancelled', error: error ?? cancelled(run.signal) };
}

/** What decides the step after a round, besides the round itself. */
export interface DecisionInput {
  readonly run: RunContext;
  readonly result: RoundResult;
  /** The round was a capture turn. */
  readonly wasCapture: boolean;
  readonly requirement: { readonly tool: string; readonly modelName: string } | undefined;
  readonly recovery: RetryPolicy;
  /** Turns that ended without the required tool, this one not yet counted. */
  readonly misses: number;
  readonly random?: () => number;
}

/** The step after a round. */
export function decideNext(input: DecisionInput): NextStep {
  const { run, result, requirement, recovery } = input;
  if (run.signal.aborted) return abortEnding(run, result.error);
  if (result.error) {
    return result.error.code === 'cancelled'
      ? abortEnding(run, result.error)
      : { kind: 'fail', reason: 'provider_error', error: result.error };
  }
  const completion = run.acceptedCompletion();
  if (completion)
    return { kind: 'complete', answer: JSON.stringify(completion.value), result: completion.value };
  if (result.capture) return { kind: 'again', capture: result.capture };
  if (input.wasCapture) return { kind: 'again' };
  if (result.stopReason === 'length') {
    if (run.truncations < run.limits.truncationRetries) return { kind: 'again', continueTruncated: true };
    return {
      kind: 'fail',
      reason: 'truncated',
      error: failure(
        'truncated',
        `The model's answer was cut off by its output limit ${run.truncations + 1} time(s) in a row (finish_reason length / max_tokens); raise maxOutputTokens or limits.truncationRetries`,
      ),
    };
  }
  if (result.stopReason === 'content_filter') {
    // Like a cut-off answer, a blocked one is never a silent success: its text is only a part. The
    // text is quoted (JSON-escaped) so a refusal says why the model declined.
    const written = result.text.trim();
    const quoted =
      written === ''
        ? ''
        : `: ${JSON.stringify(written.length > 300 ? `${written.slice(0, 300)}...` : written)}`;
    return {
      kind: 'fail',
      reason: 'model_behavior',
      error: failure(
        'content_filter',
        `The provider's content filter blocked the model's answer or the model refused (finish_reason content_filter, OpenAI refusal, Anthropic stop_reason refusal); the text it had written is not a finished answer${quoted}`,
      ),
    };
  }
  // A server that says it stopped for tool calls and sent none would otherwise be asked again and
  // again until the step limit, each a paid request: such a round ends as any round without one.
  if (result.stopReason === 'tool_calls' && result.toolCalls > 0) return { kind: 'again' };

  if (requirement) {
    if (run.succeededTools.has(requirement.tool))
      return { kind: 'complete', answer: result.text, result: undefined };
    const misses = (result.succeeded > 0 ? 0 : input.misses) + 1;
    if (misses > recovery.maxRetries) {
      return {
        kind: 'fail',
        reason: 'model_behavior',
        error: failure(
          'completion_required',
          `The model ended ${misses} turns without calling \`${requirement.modelName}\`, which this agent must call to finish`,
        ),
      };
    }
    return {
      kind: 'again',
      remind: {
        delayMs: Math.min(recovery.maxDelayMs, backoffDelay(recovery, misses - 1, input.random)),
        forceTool: misses === recovery.maxRetries,
        misses,
      },
    };
  }
  if (result.text.trim() !== '') return { kind: 'complete', answer: result.text, result: undefined };
  if (result.toolCalls > 0) return { kind: 'again' };
  return {
    kind: 'fail',
    reason: 'model_behavior',
    error: failure('empty_answer', 'The model answered with nothing and called no tool'),
  };
}

/** A failure the loop decided on (limits, the model's behaviour). */
export function failure(code: string, message: string): SerializedError {
  return { name: 'ModelBehaviorError', code, message, fields: {} };
}

/** The error of a cancelled agent. */
export function cancelled(signal: AbortSignal): SerializedError {
  const reason: unknown = signal.reason;
  const message =
    reason instanceof Error ? reason.message : reason === undefined ? 'cancelled' : String(reason);
  return { name: 'SystemError', code: 'cancelled', message: `Cancelled: ${message}`, fields: {} };
}
