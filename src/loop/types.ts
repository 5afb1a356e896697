/** The loop's contract with whatever runs it: in-process (`troupe run`, tests) or an actor host. */
import type { AgentDefinition } from '../definition/types.ts';
import type { SerializedError } from '../errors.ts';
import type { Usage } from '../providers/types.ts';

/** Why an agent failed. Every agent ends with exactly one Completed or Failed event. */
export type FailureReason =
  | 'round_limit'
  | 'budget'
  | 'provider_error'
  | 'cancelled'
  | 'crashed'
  | 'model_behavior'
  | 'tool_error'
  | 'timeout'
  /** The spawn request itself was invalid (unknown agent, bad options); nothing ran. */
  | 'invalid_request';

/** An agent's final outcome. */
export type AgentOutcome =
  | {
      readonly status: 'completed';
      readonly agentId: string;
      /** The final answer text (or the JSON of the `complete_task` result). */
      readonly answer: string;
      /** The `complete_task` result object, when the agent finished through it. */
      readonly result: unknown;
      readonly usage: Usage;
      readonly costUsd: number;
      readonly rounds: number;
    }
  | {
      readonly status: 'failed';
      readonly agentId: string;
      readonly reason: FailureReason;
      readonly error: SerializedError;
      readonly usage: Usage;
      readonly costUsd: number;
      readonly rounds: number;
    };

/** Per-agent limits beyond the definition's `maxSteps`. */
export interface AgentLimits {
  /** Rounds; defaults to the definition's `maxSteps`, capped at HARD_MAX_STEPS. */
  readonly maxSteps?: number;
  /** Wall-clock budget for the whole agent. */
  readonly wallClockMs?: number;
  /** Total input + output tokens. */
  readonly maxTotalTokens?: number;
  /** Total cost in USD (only counted where prices are known). */
  readonly maxCostUsd?: number;
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
}

/** Identity of a run for journals and events. */
export interface AgentIdentity {
  readonly agentId: string;
  readonly parentId?: string;
  readonly definition: AgentDefinition;
}
