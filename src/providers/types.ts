/** The provider-neutral model interface the loop talks to. */
import type { SerializedError } from '../errors.ts';
import type { ToolSpec } from '../tools/types.ts';
import type { ModelSettingIssue, ModelSettings } from './model-settings.ts';
import type { ModelPrice } from './pricing.ts';

export type { ReasoningEffort } from './model-settings.ts';

/**
 * Whether the model may call tools: `auto` (it decides), `none`, `required` (some tool), or `{ tool }`
 * (that tool, by its model-facing name).
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { readonly tool: string };

/**
 * One provider turn's input. The model settings (`temperature`, `maxOutputTokens`,
 * `reasoningEffort`...) are sent with every request of the turn; unset ones are not sent.
 */
export interface TurnRequest extends ModelSettings {
  readonly model: string;
  readonly system: string;
  /** The rendered projection: the whole user-side input of this round. */
  readonly input: string;
  /**
   * The agent's task as it was given, a part of `input` (after the spawn's context sections, before
   * the history). Providers send `input`, which holds it; the simulated model names the task (and
   * tells it from the context) in its answers. Absent when the caller of `turn` has no task apart
   * from `input`.
   */
  readonly task?: string;
  readonly tools: readonly ToolSpec[];
  readonly toolChoice?: ToolChoice;
  /**
   * Timeout in milliseconds for each model request of the turn (one HTTP exchange, its retries
   * and its whole stream included). Time spent waiting for tool results does not count.
   */
  readonly timeoutMs?: number;
}

/** Token counts of one model request, as the provider reported them (or troupe estimated them). */
export interface Usage {
  /** Every input token, cached ones included. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Input tokens served from the provider's prompt cache (a subset of `inputTokens`). */
  readonly cachedInputTokens: number;
  /** Output tokens spent on reasoning (a subset of `outputTokens`; 0 when not reported). */
  readonly reasoningTokens: number;
  /**
   * True when some of these counts were estimated by troupe (with the model's token counter, from
   * the exact input and the streamed output) because the provider reported no usage, or reported
   * one side unreadably. Absent when every count was reported.
   */
  readonly estimated?: boolean;
  /**
   * With `estimated`: the one side troupe estimated because the server reported only the other
   * readably (`input`: `inputTokens` and its `cachedInputTokens` are estimated; `output`:
   * `outputTokens` and its `reasoningTokens`). Absent when both sides were estimated, and in a sum
   * whose parts estimated different sides.
   */
  readonly estimatedSide?: UsageSide;
}

/** One side of a request's usage: what it read (`input`) or what it wrote (`output`). */
export type UsageSide = 'input' | 'output';

/**
 * Why the model stopped, mapped from each provider's own reason: `end_turn` (it finished),
 * `tool_calls` (it called tools), `length` (output or context limit hit: the answer is cut off),
 * `content_filter` (refused or filtered), `other` (a reason troupe does not know).
 */
export type StopReason = 'end_turn' | 'tool_calls' | 'length' | 'content_filter' | 'other';

/** A tool call the model made, as carried by a `tool_call` event. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** Parsed JSON arguments, or undefined when they did not parse (see `parseError`). */
  readonly arguments: Record<string, unknown> | undefined;
  readonly rawArguments: string;
  readonly parseError?: string;
}

/** Events streamed by a turn. Exactly one terminal event (`completed` or `error`) ends a turn. */
export type TurnEvent =
  | { readonly type: 'text_delta'; readonly text: string }
  | { readonly type: 'reasoning_delta'; readonly text: string }
  | ({ readonly type: 'tool_call' } & ToolCall)
  /** The usage of one model request, when the server reported it. */
  | { readonly type: 'usage'; readonly usage: Usage }
  /**
   * One model request ended. Comes after its text and usage and before its `tool_call` events:
   * `toolCalls` are the calls that follow (none when the response was cut off by `length` or
   * `content_filter`). `receipt` accounts for this request alone.
   */
  | {
      readonly type: 'response';
      /** 0-based position of the request in the turn. */
      readonly index: number;
      readonly text: string;
      readonly toolCalls: readonly ToolCall[];
      readonly stopReason: StopReason;
      readonly receipt: Receipt;
    }
  | {
      readonly type: 'completed';
      /** Text of the last model response of the turn. */
      readonly text: string;
      readonly stopReason: StopReason;
      readonly receipt: Receipt;
    }
  | {
      readonly type: 'error';
      readonly error: SerializedError;
      readonly receipt: Receipt;
      /** The failed request's own receipt; absent when the turn failed before sending anything. */
      readonly request?: Receipt;
      /**
       * Characters of output the failed request streamed without emitting them (tool-call
       * arguments in progress), for estimating its usage; absent when none.
       */
      readonly keptOutputChars?: number;
      /**
       * True when the failed request never left for the server: it was refused or cancelled while
       * it waited for admission (a provider slot, a run budget), before any attempt of it was sent.
       * It used nothing and is counted as 0 tokens, not at its estimated input.
       */
      readonly unsent?: boolean;
    };

/** Accounting for one turn (possibly several HTTP requests). */
export interface Receipt {
  readonly provider: string;
  readonly model: string;
  /** Model requests made (retries not counted). */
  readonly requests: number;
  readonly usage: Usage;
  /** Time spent in model requests, summed; time waiting for tool results is not included. */
  readonly latencyMs: number;
  /** Status of the last HTTP response; undefined for providers without HTTP or before any answer. */
  readonly httpStatus: number | undefined;
  readonly retries: number;
  /** USD, when the model's price is known and every request reported (or was given) its usage. */
  readonly costUsd: number | undefined;
  /**
   * Requests whose server reported no usage (for a retried request: whose last attempt reported
   * none): their counts are missing from `usage` unless `usage.estimated` says troupe filled them
   * in. Absent in journals of troupe 0.2 and earlier.
   */
  readonly requestsWithoutUsage?: number;
  /**
   * The failed attempts that were retried, in order (at most {@link RETRY_LOG_MAX}); absent when
   * there were none, and in journals of troupe 0.3 and earlier.
   */
  readonly retryLog?: readonly RetryRecord[];
  /**
   * Milliseconds spent waiting for a provider slot (admission: concurrency, rate limits, a 429
   * pause shared by every agent), over all attempts; absent when nothing waited.
   */
  readonly queuedMs?: number;
}

/** One failed attempt of a model request that was retried. */
export interface RetryRecord {
  /** Milliseconds from the start of the request (or turn) to the failure. */
  readonly atMs: number;
  /** Error code of the failed attempt (`rate_limited`, `server_error`, `network`, `timeout`...). */
  readonly code: string;
  /** HTTP status of the failed attempt, when it got one. */
  readonly status?: number;
  /** Backoff slept before the next attempt (the server's retry-after when it sent one). */
  readonly delayMs: number;
}

/**
 * A live turn: iterate events; answer tool calls with `respond` before the model continues.
 *
 * A turn never continues on its own: it sends its first request when iteration starts, and each
 * later one only once the caller answered every tool call of the last response. It has no bound on
 * its requests, so a caller that answers every call keeps it going for as long as the model asks
 * for tools (a server that answers every continuation with another call, forever). The agent loop
 * bounds it with `maxSteps`; a direct caller bounds it the same way: count the `response` events
 * and call {@link Turn.stop} (or leave the iteration).
 */
export interface Turn extends AsyncIterable<TurnEvent> {
  /**
   * Supplies the result of a tool call the model made in this turn. Calls may be answered in any
   * order; once every call of a response is answered the provider sends the results back to the
   * model. Throws a `UserError` (`unknown_tool_call`, `duplicate_tool_result`) on misuse.
   */
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
  /**
   * Starts a turn: nothing is sent until it is iterated. A turn makes one model request, then one
   * more for each response whose tool calls the caller answered; it has no step bound of its own
   * (see {@link Turn}).
   */
  turn(request: TurnRequest, signal?: AbortSignal): Turn;
  /**
   * The price this provider charges for `model`, or undefined when it is not known. The loop prices
   * usage it had to estimate with it and warns when a cost budget cannot be enforced. A provider
   * without this method is treated as pricing nothing.
   */
  priceOf?(model: string): ModelPrice | undefined;
  /**
   * How this provider would send `settings`: the settings it cannot send as asked (`unsupported`:
   * a turn with them fails with `bad_request` before anything is sent) and the ones it leaves out
   * (`dropped`). The loop asks before an agent's first request, fails the agent on an unsupported
   * setting and notes dropped ones in the Started event. A provider without this method is sent
   * every setting as given.
   */
  checkModelSettings?(settings: ModelSettings, model: string): readonly ModelSettingIssue[];
}

/** What an admission controller learns about a request before it is sent. */
export interface AdmissionTicket {
  readonly provider: string;
  readonly model: string;
  /** Rough input size, ceil(chars / 4), for token-per-minute budgets. */
  readonly estimatedInputTokens: number;
}

/** Gives back an admission slot; `usage` is the request's usage when it reported one. */
export type AdmissionRelease = (usage: Usage | undefined) => void;

/**
 * Shares request limits between providers (the supervisor's per-key queue). `acquire` is called
 * before every HTTP request, retries included, and must reject with `signal.reason` when the signal
 * aborts; the release function is called once the request's response is fully read or failed.
 */
export interface Admission {
  acquire(ticket: AdmissionTicket, signal: AbortSignal): Promise<AdmissionRelease>;
}

/** Information passed to {@link ProviderHooks.onRateLimited}. */
export interface RateLimitInfo {
  readonly provider: string;
  readonly model: string;
  readonly status: number | undefined;
  /** True when the provider will retry by itself after the wait. */
  readonly willRetry: boolean;
}

/** Optional hooks shared by the HTTP providers. */
export interface ProviderHooks {
  /** Called before every HTTP request. @default no admission control */
  readonly admission?: Admission;
  /**
   * Called on every `rate_limited` answer (HTTP 429 or an in-stream rate-limit error), with the
   * server's requested wait when it gave one, so a supervisor can pause every agent on that key.
   */
  readonly onRateLimited?: (retryAfterMs: number | undefined, info: RateLimitInfo) => void;
}
