/** The provider-neutral model interface the loop talks to. */
import type { SerializedError } from '../errors.ts';
import type { ToolSpec } from '../tools/types.ts';

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export type ToolChoice = 'auto' | 'none' | 'required' | { readonly tool: string };

/** One provider turn's input. */
export interface TurnRequest {
  readonly model: string;
  readonly system: string;
  /** The rendered projection: the whole user-side input of this round. */
  readonly input: string;
  readonly tools: readonly ToolSpec[];
  readonly toolChoice?: ToolChoice;
  readonly reasoningEffort?: ReasoningEffort;
  readonly maxOutputTokens?: number;
  readonly temperature?: number;
  /** Per-request timeout in milliseconds. */
  readonly timeoutMs?: number;
}

export interface Usage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  readonly reasoningTokens: number;
}

export type StopReason = 'end_turn' | 'tool_calls' | 'length' | 'content_filter' | 'other';

/** Events streamed by a turn. Exactly one terminal event (`completed` or `error`) ends a turn. */
export type TurnEvent =
  | { readonly type: 'text_delta'; readonly text: string }
  | { readonly type: 'reasoning_delta'; readonly text: string }
  | {
      readonly type: 'tool_call';
      readonly id: string;
      readonly name: string;
      /** Parsed JSON arguments, or undefined when they did not parse (see `parseError`). */
      readonly arguments: Record<string, unknown> | undefined;
      readonly rawArguments: string;
      readonly parseError?: string;
    }
  | { readonly type: 'usage'; readonly usage: Usage }
  | {
      readonly type: 'completed';
      readonly text: string;
      readonly stopReason: StopReason;
      readonly receipt: Receipt;
    }
  | { readonly type: 'error'; readonly error: SerializedError; readonly receipt: Receipt };

/** Accounting for one turn (possibly several HTTP requests). */
export interface Receipt {
  readonly provider: string;
  readonly model: string;
  readonly requests: number;
  readonly usage: Usage;
  readonly latencyMs: number;
  readonly httpStatus: number | undefined;
  readonly retries: number;
  /** USD, when the model's price is known. */
  readonly costUsd: number | undefined;
}

/** A live turn: iterate events; answer tool calls with `respond` before the model continues. */
export interface Turn extends AsyncIterable<TurnEvent> {
  /** Supplies the result of a tool call the model made in this turn. */
  respond(callId: string, result: string): void;
  /**
   * Ends the turn once the pending tool calls are answered, instead of sending their results back
   * to the model; the terminal event is then `completed` with stop reason `tool_calls`. The loop
   * uses it to end a slice after a state update.
   */
  stop(): void;
}

/** A model provider. Implementations: openai, anthropic, scripted, simulated. */
export interface Provider {
  /** Name used in receipts and rate-limit keys, e.g. `openai`. */
  readonly name: string;
  turn(request: TurnRequest, signal?: AbortSignal): Turn;
}
