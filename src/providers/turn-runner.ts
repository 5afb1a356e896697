/**
 * The provider-neutral half of a turn: event queue, tool-call bookkeeping (`respond`, `stop`),
 * cancellation, per-request timeouts, the receipt and the one terminal event. Providers supply
 * only {@link TurnDriver.exchange}: one model request in their native protocol.
 */

import { abortable, followSignal } from '../abort.ts';
import {
  describeValue,
  isTroupeError,
  type ProviderError,
  type SerializedError,
  serializeError,
  UserError,
} from '../errors.ts';
import { EventQueue } from './event-queue.ts';
import type { ModelPrice } from './pricing.ts';
import { providerError } from './provider-error.ts';
import { ReceiptBuilder } from './receipt.ts';
import type { StopReason, ToolCall, Turn, TurnEvent, Usage } from './types.ts';

/** What one model request produced, once its response has ended. */
export interface ModelResponse {
  /** The response's text (all text blocks, in order). */
  readonly text: string;
  /** Complete tool calls; ignored when the stop reason is `length` or `content_filter`. */
  readonly toolCalls: readonly ToolCall[];
  readonly stopReason: StopReason;
}

/** A tool call's answer, as the next request carries it back to the model. */
export interface ToolResult {
  readonly callId: string;
  readonly name: string;
  readonly result: string;
}

/** Streaming events a driver emits while a response arrives. */
export type StreamEvent = Extract<TurnEvent, { type: 'text_delta' | 'reasoning_delta' }>;

/** What a driver can see and do during one model request. */
export interface ExchangeContext {
  /** Aborts when the turn is cancelled (by the caller's signal or the consumer leaving). */
  readonly signal: AbortSignal;
  /**
   * Runs `work` under the request timeout, with a signal that also aborts when it expires; an
   * expiry becomes a `timeout` ProviderError. HTTP drivers wrap each attempt after admission, so
   * time spent queueing for a slot or sleeping between retries does not count.
   */
  withTimeout<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T>;
  emit(event: StreamEvent): void;
  /** Emits a `usage` event and adds it to the receipt. */
  reportUsage(usage: Usage): void;
  reportHttpStatus(status: number): void;
  reportRetry(): void;
  /** Events emitted to the consumer so far: a retry is safe only while this has not changed. */
  emittedCount(): number;
}

/** One provider's side of a turn. */
export interface TurnDriver {
  readonly provider: string;
  readonly model: string;
  readonly price: ModelPrice | undefined;
  /** Applied by {@link ExchangeContext.withTimeout}; undefined = none. */
  readonly timeoutMs: number | undefined;
  /** An error that fails the turn before any request is made (e.g. an unsupported option). */
  readonly preflightError?: ProviderError | undefined;
  /**
   * Makes one model request and reads its whole response. `results` answers the tool calls of the
   * previous response (empty for the first request); the driver keeps its native conversation.
   * Throws a ProviderError on failure.
   */
  exchange(results: readonly ToolResult[], ctx: ExchangeContext): Promise<ModelResponse>;
}

interface PendingCall {
  readonly name: string;
  result: string | undefined;
}

/** Starts a turn: nothing is sent until the consumer begins iterating. */
export function createTurn(driver: TurnDriver, signal?: AbortSignal): Turn {
  return new RunningTurn(driver, signal);
}

class RunningTurn implements Turn {
  readonly #driver: TurnDriver;
  readonly #signal: AbortSignal | undefined;
  readonly #queue = new EventQueue<TurnEvent>();
  readonly #controller = new AbortController();
  readonly #receipt: ReceiptBuilder;
  #started = false;
  #stopped = false;
  #emitted = 0;
  #pending: Map<string, PendingCall> | undefined;
  #onAllAnswered: (() => void) | undefined;
  /** Shared by every request of the turn; its signal is the turn's cancellation signal. */
  readonly #context: ExchangeContext = {
    signal: this.#controller.signal,
    withTimeout: (work) => this.#withTimeout(work),
    emit: (event) => {
      this.#emitted += 1;
      this.#queue.push(event);
    },
    reportUsage: (usage) => {
      this.#emitted += 1;
      this.#receipt.addUsage(usage);
      this.#queue.push({ type: 'usage', usage });
    },
    reportHttpStatus: (status) => this.#receipt.setHttpStatus(status),
    reportRetry: () => this.#receipt.addRetry(),
    emittedCount: () => this.#emitted,
  };

  constructor(driver: TurnDriver, signal: AbortSignal | undefined) {
    this.#driver = driver;
    this.#signal = signal;
    this.#receipt = new ReceiptBuilder(driver.provider, driver.model, driver.price);
  }

  [Symbol.asyncIterator](): AsyncIterator<TurnEvent> {
    if (this.#started) {
      throw new UserError('turn_already_iterated', 'A turn can be iterated only once.', {
        provider: this.#driver.provider,
      });
    }
    this.#started = true;
    void this.#run();
    return {
      next: () => this.#queue.next(),
      return: async () => {
        this.#controller.abort(new Error('the consumer stopped iterating'));
        this.#queue.close();
        return { done: true, value: undefined };
      },
    };
  }

  respond(callId: string, result: string): void {
    const call = this.#pending?.get(callId);
    if (this.#pending === undefined || call === undefined) {
      const known = this.#pending === undefined ? 'none' : [...this.#pending.keys()].join(', ');
      throw new UserError(
        'unknown_tool_call',
        `Expected the id of a pending tool call (${known}), got ${describeValue(callId)}.`,
        { provider: this.#driver.provider, callId },
      );
    }
    if (call.result !== undefined) {
      throw new UserError('duplicate_tool_result', `Tool call ${callId} was already answered.`, {
        provider: this.#driver.provider,
        callId,
      });
    }
    call.result = result;
    for (const other of this.#pending.values()) if (other.result === undefined) return;
    this.#onAllAnswered?.();
  }

  stop(): void {
    this.#stopped = true;
  }

  async #run(): Promise<void> {
    const unfollow = followSignal(this.#signal, this.#controller);
    try {
      if (this.#driver.preflightError !== undefined) throw this.#driver.preflightError;
      let results: readonly ToolResult[] = [];
      for (;;) {
        const response = await this.#exchange(results);
        const truncated = response.stopReason === 'length' || response.stopReason === 'content_filter';
        if (response.toolCalls.length === 0 || truncated) {
          this.#finish(response.text, response.stopReason);
          return;
        }
        results = await this.#collect(response.toolCalls);
        if (this.#stopped) {
          this.#finish(response.text, 'tool_calls');
          return;
        }
      }
    } catch (error) {
      this.#queue.push({ type: 'error', error: this.#failure(error), receipt: this.#receipt.build() });
    } finally {
      unfollow();
      this.#queue.end();
    }
  }

  #finish(text: string, stopReason: StopReason): void {
    this.#queue.push({ type: 'completed', text, stopReason, receipt: this.#receipt.build() });
  }

  async #exchange(results: readonly ToolResult[]): Promise<ModelResponse> {
    const started = performance.now();
    try {
      return await this.#driver.exchange(results, this.#context);
    } finally {
      this.#receipt.addRequest(performance.now() - started);
    }
  }

  async #withTimeout<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const { timeoutMs } = this.#driver;
    const turnSignal = this.#controller.signal;
    if (timeoutMs === undefined) return work(turnSignal);
    const controller = new AbortController();
    const unfollow = followSignal(turnSignal, controller);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    try {
      return await work(controller.signal);
    } catch (error) {
      throw timedOut && !turnSignal.aborted ? this.#timeoutError(timeoutMs) : error;
    } finally {
      clearTimeout(timer);
      unfollow();
    }
  }

  async #collect(calls: readonly ToolCall[]): Promise<ToolResult[]> {
    const pending = new Map<string, PendingCall>();
    for (const call of calls) {
      if (pending.has(call.id)) {
        throw providerError('bad_response', `The model used the tool call id ${call.id} twice.`, {
          provider: this.#driver.provider,
        });
      }
      pending.set(call.id, { name: call.name, result: undefined });
    }
    const answered = new Promise<void>((resolve) => {
      this.#onAllAnswered = resolve;
    });
    this.#pending = pending;
    try {
      for (const call of calls) {
        this.#emitted += 1;
        this.#queue.push({ type: 'tool_call', ...call });
      }
      await abortable(answered, this.#controller.signal);
    } finally {
      this.#pending = undefined;
      this.#onAllAnswered = undefined;
    }
    return calls.map((call) => ({
      callId: call.id,
      name: call.name,
      result: pending.get(call.id)?.result ?? '',
    }));
  }

  #timeoutError(timeoutMs: number): ProviderError {
    return providerError(
      'timeout',
      `${this.#driver.provider} did not finish a request within ${timeoutMs} ms.`,
      { provider: this.#driver.provider },
      { timeoutMs },
    );
  }

  #failure(error: unknown): SerializedError {
    const provider = this.#driver.provider;
    if (this.#controller.signal.aborted) {
      const reason: unknown = this.#controller.signal.reason;
      const why = reason instanceof Error ? reason.message : String(reason);
      return providerError('cancelled', `The ${provider} turn was cancelled: ${why}.`, { provider }).toJSON();
    }
    if (isTroupeError(error)) return error.toJSON();
    return serializeError(error);
  }
}
