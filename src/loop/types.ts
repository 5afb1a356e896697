/** The loop's contract with whatever runs it: in-process (`troupe run`, tests) or an actor host. */
import type { AgentDefinition } from '../definition/types.ts';
import type { SerializedError } from '../errors.ts';
import type { ApprovalDecision, ApprovalRequest } from '../protocol/approvals.ts';
import type { Usage } from '../providers/types.ts';
import type { ReplayCounts } from '../replay/types.ts';
import type { ToolOutcome, ToolTraceContext } from '../tools/types.ts';

/**
 * Every reason an agent can fail, in one list (the CLI's `--reason` and plan checks read it):
 * - `step_limit`: `maxSteps` model requests were made without finishing.
 * - `budget`: a token or cost budget (`maxTotalTokens`, `maxCostUsd`) or the context budget was spent.
 * - `timeout`: `wallClockMs` passed (the request and tool in flight were aborted).
 * - `truncated`: the answer was cut off by its output limit again after the continuation re-ask(s).
 * - `invalid_request`: the spawn request itself was invalid (unknown agent, bad options); nothing ran.
 */
export const FAILURE_REASONS = [
  'step_limit',
  'budget',
  'provider_error',
  'cancelled',
  'crashed',
  'model_behavior',
  'tool_error',
  'timeout',
  'truncated',
  'invalid_request',
] as const;

/** Why an agent failed (see {@link FAILURE_REASONS}). Every agent ends with exactly one Completed or Failed event. */
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** An agent's final outcome. */
export type AgentOutcome =
  | {
      readonly status: 'completed';
      readonly agentId: string;
      /**
       * The final answer text (or the JSON of the `complete_task` result), as the model gave it:
       * not masked (see `result`).
       */
      readonly answer: string;
      /**
       * The `complete_task` result object, when the agent finished through it, as the model gave
       * it. It is the deliverable the program asked for, so it is not masked: a secret the model
       * repeats in it is there (what troupe writes or prints of it is masked; mask it with
       * `redactValue` before you log or store it).
       */
      readonly result: unknown;
      /** Summed usage; `usage.estimated` when troupe estimated counts a server did not report. */
      readonly usage: Usage;
      /** USD; null when the model's price is unknown. */
      readonly costUsd: number | null;
      /** Rounds: renders of the projection (each one provider turn). */
      readonly rounds: number;
      /** Steps: model requests, what `maxSteps` counts (absent when the agent never ran the loop). */
      readonly steps?: number;
      /** A replayed agent: how its tool calls were answered (recorded, live, refused). */
      readonly replay?: ReplayCounts;
      /** A retry's share of `usage` and `costUsd` spent by the attempt it continues: see {@link InheritedSpend}. */
      readonly inherited?: InheritedSpend;
    }
  | {
      readonly status: 'failed';
      readonly agentId: string;
      readonly reason: FailureReason;
      readonly error: SerializedError;
      readonly usage: Usage;
      readonly costUsd: number | null;
      readonly rounds: number;
      readonly steps?: number;
      readonly replay?: ReplayCounts;
      readonly inherited?: InheritedSpend;
    };

/**
 * What a retry (`SpawnOptions.retryOf`, `troupe resume --retry-failed`) inherited with the journal
 * it continues: the requests the failed attempt made, which its outcome's `usage` and `costUsd`
 * include (an outcome carries the agent's whole history) and which the failed attempt's own
 * outcome already counted. What the retry spent itself is `usage` minus this (`ownSpend`); run
 * totals (`runUsage`, `summary.json`, `troupe report`) add only that.
 */
export interface InheritedSpend {
  readonly usage: Usage;
  /** USD; null when the price of some inherited request is unknown. */
  readonly costUsd: number | null;
}

/**
 * Per-agent limits, checked before every model request (inside a round too). For the budgets,
 * `0` means unlimited. docs/limits.md lists every bound and default.
 */
export interface AgentLimits {
  /** Model requests (steps). @default the definition's `maxSteps`, capped at HARD_MAX_STEPS (250) */
  readonly maxSteps?: number;
  /**
   * Wall-clock budget of one run of the agent, in ms: when it passes, the request and the tool in
   * flight are aborted and the agent fails with `timeout`. A resumed agent gets its time again.
   * At most 2147483647 (`MAX_TIMER_MS`, about 24.8 days): Node fires a longer timer at once.
   * @default 0 (unlimited)
   */
  readonly wallClockMs?: number;
  /** Total input + output tokens, estimated ones included. @default DEFAULT_MAX_TOTAL_TOKENS (1,000,000) */
  readonly maxTotalTokens?: number;
  /** Total cost in USD; needs a known price for the model. @default 0 (unlimited) */
  readonly maxCostUsd?: number;
  /**
   * Continuation re-asks after an answer cut off by the output limit, before `truncated`.
   * @default DEFAULT_TRUNCATION_RETRIES (1)
   */
  readonly truncationRetries?: number;
}

/** What an agent asks of its runner through the two routed tools. */
export interface AgentChannels {
  /**
   * Called when the model calls `complete_task` with arguments that passed the outputSchema check.
   * Resolve `{ accepted: true }` to end the agent, or `{ accepted: false, message }` to refuse.
   */
  completeTask?(result: unknown): Promise<{ readonly accepted: boolean; readonly message?: string }>;
  /**
   * Parks until instruction number `index` arrives (resolves its text) or `timeoutMs` passes
   * (resolves null). `index` counts the instructions the agent has already received, so a wait
   * repeated after a resume is idempotent. `timeoutMs` undefined waits without limit.
   */
  waitForInstruction?(
    index: number,
    timeoutMs: number | undefined,
    signal: AbortSignal,
  ): Promise<string | null>;
  /**
   * A session's turn for user message `turn` starts: returns the signal that cancels this turn
   * alone (the session then journals TurnCancelled, notes it in the history and waits for message
   * `turn + 1`), or undefined when nothing can. Without it only the agent's own cancel stops a
   * turn, and that ends the session.
   */
  turnSignal?(turn: number): AbortSignal | undefined;
  /**
   * Parks until a decision on `request` arrives; resolves null when `signal` aborts (the deadline
   * passed, or the agent was cancelled). The runner makes the request known to whoever decides (the
   * supervisor's `agent:approval` event) once per `requestId`: a resumed agent asks again under the
   * same id, and a decision that arrived meanwhile is answered at once. Without this channel, calls
   * that ask are denied.
   */
  requestApproval?(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision | null>;
  /**
   * The outcome of host tool call `callId` (tool `name`, run on the supervisor) that was cut off
   * when the agent's thread or worker died: the supervisor ran it and keeps its outcome (or is
   * still running it: the answer waits for it). Resolves `INTERRUPTED_TOOL_RESULT` when the
   * supervisor has no record of it; returns undefined when `name` is not a host tool. Never runs
   * the tool. Without this channel every cut-off call is recorded as interrupted.
   */
  hostToolOutcome?(name: string, callId: string, signal: AbortSignal): Promise<ToolOutcome> | undefined;
  /**
   * Runs tool call `callId` (canonical tool `name`) inside the trace context of its
   * `execute_tool` span, so that spans made while the tool runs (an MCP request, web_fetch's
   * HTTP request, a user tool's own) are children of that span, not of the agent's. Not asked
   * for routed tools (`complete_task`, `wait_for_instruction`). Without it tools run in the
   * agent's context. `run` is given what the tool gets as `ctx.traceContext`: the span's W3C
   * trace context, asked for only when the tool reads it.
   */
  inToolSpan?<T>(
    name: string,
    callId: string,
    run: (traceContext?: () => Promise<ToolTraceContext | undefined>) => Promise<T>,
  ): Promise<T>;
}

/** Identity of a run for journals and events. */
export interface AgentIdentity {
  readonly agentId: string;
  readonly parentId?: string;
  readonly definition: AgentDefinition;
}
