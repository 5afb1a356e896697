/**
 * The provider-neutral half of a turn: event queue, tool-call bookkeeping (`respond`, `stop`),
 * cancellation, per-request timeouts, the output bound, a receipt per request and per turn, and the
 * one terminal event. Providers supply only {@link TurnDriver.exchange}: one model request in their
 * native protocol.
 */

import { followSignal } from '../abort.ts';
import {
  describeValue,
  isTroupeError,
  type ProviderError,
  type SerializedError,
  serializeError,
  UserError,
} from '../errors.ts';
import { redactValue } from '../journal/redact.ts';
import { extend } from '../objects.ts';
import { timerDelay } from '../option-checks.ts';
import {
  DEFAULT_MAX_OUTPUT_CHARS,
  MAX_TOOL_CALL_NAME_CHARS,
  MAX_TOOL_CALLS_PER_RESPONSE,
  MAX_UTF8_BYTES_PER_CHAR,
} from './constants.ts';
import { EventQueue } from './event-queue.ts';
import type { ModelPrice } from './pricing.ts';
import { providerError } from './provider-error.ts';
import { addUsage, ReceiptBuilder } from './receipt.ts';
import { noteAttempts, type RetriedAttempts, reportedOutputOf } from './request-attempts.ts';
import type { Receipt, RetryRecord, StopReason, ToolCall, Turn, TurnEvent, Usage } from './types.ts';

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
  /** Emits a text or reasoning delta; its characters count toward the request's output bound. */
  emit(event: StreamEvent): void;
  /**
   * Counts output the driver keeps without emitting it (tool-call argument fragments): `chars`
   * UTF-16 characters of `bytes` UTF-8 bytes (without `bytes`, 3 a character: the most one takes).
   * Throws `response_too_large` once the request's text, reasoning and arguments pass
   * `maxOutputChars`.
   */
  countOutput(chars: number, bytes?: number): void;
  /** Characters of output this request has streamed so far: emitted and kept (see countOutput). */
  outputChars(): number;
  /**
   * UTF-8 bytes of the output this request has streamed so far: what bounds an output count the
   * server reports when the request has no output cap (`uncappedOutputBound`).
   */
  outputBytes(): number;
  /** Emits a `usage` event and adds it to the receipt. */
  reportUsage(usage: Usage): void;
  /**
   * Like {@link reportUsage}, for usage an attempt reported before it failed (Anthropic's
   * `message_start` input count, then a broken stream): counted in the receipts, but not as output
   * the consumer saw, so the request may still be retried (the receipt then sums both attempts).
   */
  reportFailedAttemptUsage(usage: Usage): void;
  /**
   * The status of the attempt's HTTP answer. A retried attempt answered with a 2xx was processed
   * by the server: the loop charges it, as it reported or estimated when it reported nothing.
   */
  reportHttpStatus(status: number): void;
  /**
   * Counts a retried attempt, once it failed and before the next one starts; `detail` says why it
   * failed and how long the backoff is. The next attempt streams, reports and is bounded
   * (`maxOutputChars`) on its own.
   */
  reportRetry(detail?: Omit<RetryRecord, 'atMs'>): void;
  /** Adds time spent waiting for a provider slot (admission) to the receipts. */
  reportQueued(ms: number): void;
  /**
   * Says the attempt in progress never left: its admission was refused or cancelled. When no
   * earlier attempt of the request was sent either, a failure of the request counts no usage.
   */
  reportNotSent(): void;
  /** Events emitted to the consumer so far: a retry is safe only while this has not changed. */
  emittedCount(): number;
}

/** What a stream accumulator needs of its request: emitting deltas, counting kept output. */
export type StreamSink = Pick<ExchangeContext, 'emit' | 'countOutput'>;

/** One provider's side of a turn. */
export interface TurnDriver {
  readonly provider: string;
  readonly model: string;
  readonly price: ModelPrice | undefined;
  /** Applied by {@link ExchangeContext.withTimeout}; undefined = none. */
  readonly timeoutMs: number | undefined;
  /** Output characters one request may stream. @default DEFAULT_MAX_OUTPUT_CHARS */
  readonly maxOutputChars?: number;
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

/**
 * Starts a turn: nothing is sent until the consumer begins iterating. The turn makes the driver's
 * first request, then one more each time the consumer answered every tool call of a response; it
 * never continues unanswered and has no step bound of its own (see {@link Turn}: the caller
 * bounds it with `stop()`, as the agent loop does for `maxSteps`).
 */
export function createTurn(driver: TurnDriver, signal?: AbortSignal): Turn {
  return new RunningTurn(driver, signal);
}

/**
 * The per-request state of a turn and the {@link ExchangeContext} its driver sees. A class, not an
 * object of closures: a turn lives as long as its tool calls, so a parked agent keeps one.
 */
class TurnExchange implements ExchangeContext {
  readonly signal: AbortSignal;
  readonly #turn: RunningTurn;
  readonly #queue: EventQueue<TurnEvent>;
  readonly #receipt: ReceiptBuilder;
  /** The receipt of the request in flight. */
  request: ReceiptBuilder | undefined;
  /** Output characters the attempt in flight streamed. */
  streamedChars = 0;
  /** UTF-8 bytes of `streamedChars`. */
  streamedBytes = 0;
  /** Retried attempts of the request in flight: each one before the last was sent. */
  requestRetries = 0;
  /** The request in flight never left: its first attempt's admission was refused. */
  requestUnsent = false;
  /** Of `streamedChars`, what was emitted as text or reasoning (the rest: kept tool-call arguments). */
  emittedChars = 0;
  emitted = 0;
  /** The usage the attempt in flight reported, and what its server had counted of its output. */
  #attemptUsage: Usage | undefined;
  #attemptReportedOutput: number | undefined;
  #attemptStatus: number | undefined;
  #attemptUnsent = false;
  /** The request's attempts that were retried after their server answered. */
  #retried: RetriedAttempts | undefined;

  constructor(turn: RunningTurn, signal: AbortSignal, queue: EventQueue<TurnEvent>, receipt: ReceiptBuilder) {
    this.#turn = turn;
    this.signal = signal;
    this.#queue = queue;
    this.#receipt = receipt;
  }

  withTimeout<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return this.#turn.withTimeout(work);
  }

  emit(event: StreamEvent): void {
    // Counted as emitted only once it passed the output bound: the delta that overflows it never
    // reaches the consumer, so its characters are output the loop did not see (keptOutputChars).
    this.countOutput(event.text.length, Buffer.byteLength(event.text, 'utf8'));
    this.emittedChars += event.text.length;
    this.emitted += 1;
    this.#queue.push(event);
  }

  countOutput(chars: number, bytes = chars * MAX_UTF8_BYTES_PER_CHAR): void {
    this.streamedChars += chars;
    this.streamedBytes += bytes;
    this.#turn.checkOutput(this.streamedChars);
  }

  outputChars(): number {
    return this.streamedChars;
  }

  outputBytes(): number {
    return this.streamedBytes;
  }

  reportUsage(usage: Usage): void {
    this.emitted += 1;
    this.reportFailedAttemptUsage(usage);
  }

  reportFailedAttemptUsage(usage: Usage): void {
    this.#receipt.addUsage(usage);
    this.request?.addUsage(usage);
    this.#queue.push({ type: 'usage', usage });
    const reported = reportedOutputOf(usage);
    if (this.#attemptUsage === undefined) {
      this.#attemptUsage = usage;
      this.#attemptReportedOutput = reported;
    } else {
      // Only a provider module reports twice in one attempt: the counts add up, the floor is lost.
      this.#attemptUsage = addUsage(this.#attemptUsage, usage);
      this.#attemptReportedOutput = undefined;
    }
  }

  reportHttpStatus(status: number): void {
    this.#receipt.setHttpStatus(status);
    this.request?.setHttpStatus(status);
    this.#attemptStatus = status;
  }

  reportRetry(detail?: Omit<RetryRecord, 'atMs'>): void {
    this.requestRetries += 1;
    this.#receipt.addRetry(detail);
    this.request?.addRetry(detail);
    this.#retryAttempt();
  }

  reportNotSent(): void {
    this.requestUnsent = this.requestRetries === 0;
    this.#attemptUnsent = true;
  }

  reportQueued(ms: number): void {
    this.#receipt.addQueued(ms);
    this.request?.addQueued(ms);
  }

  emittedCount(): number {
    return this.emitted;
  }

  /** A new request: `request` is its receipt. */
  startRequest(request: ReceiptBuilder): void {
    this.request = request;
    this.requestRetries = 0;
    this.requestUnsent = false;
    this.#retried = undefined;
    this.#startAttempt();
  }

  /** The request's receipt, with how it splits over its attempts for the loop (request-attempts.ts). */
  requestReceipt(request: ReceiptBuilder): Receipt {
    return noteAttempts(request.build(), {
      last: this.#attemptUsage,
      lastReportedOutput: this.#attemptReportedOutput,
      lastHttpStatus: this.#attemptStatus,
      lastUnsent: this.#attemptUnsent,
      retried: this.#retried,
    });
  }

  /**
   * The attempt in flight failed and is retried. When its server answered (2xx) it processed the
   * request, and bills it: it is charged with the request, as reported or, reporting nothing, as
   * the loop estimates it from the request and what the attempt streamed.
   */
  #retryAttempt(): void {
    const answered =
      this.#attemptStatus !== undefined && this.#attemptStatus >= 200 && this.#attemptStatus < 300;
    if (this.#attemptUsage !== undefined || answered) {
      const sofar = this.#retried ?? { usage: undefined, withoutUsage: 0, withoutUsageChars: 0 };
      const usage = this.#attemptUsage;
      this.#retried =
        usage === undefined
          ? {
              usage: sofar.usage,
              withoutUsage: sofar.withoutUsage + 1,
              withoutUsageChars: sofar.withoutUsageChars + this.streamedChars,
            }
          : extend(sofar, { usage: sofar.usage === undefined ? usage : addUsage(sofar.usage, usage) });
    }
    this.#startAttempt();
  }

  /** Each attempt streams, reports and is bounded on its own. */
  #startAttempt(): void {
    this.streamedChars = 0;
    this.streamedBytes = 0;
    this.emittedChars = 0;
    this.#attemptUsage = undefined;
    this.#attemptReportedOutput = undefined;
    this.#attemptStatus = undefined;
    this.#attemptUnsent = false;
  }
}

/**
 * The answers to one response's tool calls, settled by the last `respond` or by the turn's
 * cancellation. One promise and an object listener: every model request after a tool call goes
 * through here, and `abortable(...).finally(...).then(...)` cost three more promise hops.
 */
class AnswersWait {
  readonly #turn: RunningTurn;
  readonly #signal: AbortSignal;
  readonly #calls: readonly ToolCall[];
  readonly #pending: Map<string, PendingCall>;
  readonly #resolve: (results: ToolResult[]) => void;
  readonly #reject: (reason: unknown) => void;

  constructor(
    turn: RunningTurn,
    signal: AbortSignal,
    calls: readonly ToolCall[],
    pending: Map<string, PendingCall>,
    resolve: (results: ToolResult[]) => void,
    reject: (reason: unknown) => void,
  ) {
    this.#turn = turn;
    this.#signal = signal;
    this.#calls = calls;
    this.#pending = pending;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  answered(): void {
    this.#signal.removeEventListener('abort', this);
    const pending = this.#pending;
    // Pushed, not map()ped: an optimized map() returns a holey array where the interpreter's is
    // packed, and the providers' code optimized on the first results deopted on it.
    const results: ToolResult[] = [];
    for (const call of this.#calls) {
      results.push({ callId: call.id, name: call.name, result: pending.get(call.id)?.result ?? '' });
    }
    this.#resolve(results);
  }

  /** The turn's cancellation. */
  handleEvent(): void {
    this.#signal.removeEventListener('abort', this);
    this.#turn.clearPending();
    this.#reject(this.#signal.reason);
  }
}

class RunningTurn implements Turn {
  readonly #driver: TurnDriver;
  readonly #signal: AbortSignal | undefined;
  readonly #queue = new EventQueue<TurnEvent>();
  readonly #controller = new AbortController();
  readonly #receipt: ReceiptBuilder;
  readonly #maxOutputChars: number;
  #started = false;
  #stopped = false;
  #pending: Map<string, PendingCall> | undefined;
  /** Settled by the last answer to the pending calls. */
  #answers: AnswersWait | undefined;
  /** Shared by every request of the turn; its signal is the turn's cancellation signal. */
  readonly #context: TurnExchange;

  constructor(driver: TurnDriver, signal: AbortSignal | undefined) {
    this.#driver = driver;
    this.#signal = signal;
    this.#receipt = new ReceiptBuilder(driver.provider, driver.model, driver.price);
    this.#maxOutputChars = driver.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
    this.#context = new TurnExchange(this, this.#controller.signal, this.#queue, this.#receipt);
  }

  [Symbol.asyncIterator](): AsyncIterator<TurnEvent> {
    if (this.#started) {
      throw new UserError('turn_already_iterated', 'A turn can be iterated only once.', {
        provider: this.#driver.provider,
      });
    }
    this.#started = true;
    void this.#run();
    return this;
  }

  next(): Promise<IteratorResult<TurnEvent>> {
    return this.#queue.next();
  }

  async return(): Promise<IteratorResult<TurnEvent>> {
    this.#controller.abort(new Error('the consumer stopped iterating'));
    this.#queue.close();
    return { done: true, value: undefined };
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
    // A result that is not a string (from code that is not type-checked) would be read as "not
    // answered yet" (undefined) or reach the provider as a number or an object.
    if (typeof result !== 'string') {
      throw new UserError(
        'invalid_tool_result',
        `Expected the result of tool call ${callId} to be a string, got ${describeValue(result)}.`,
        { provider: this.#driver.provider, callId },
      );
    }
    call.result = result;
    for (const other of this.#pending.values()) if (other.result === undefined) return;
    this.#answers?.answered();
  }

  stop(): void {
    this.#stopped = true;
  }

  async #run(): Promise<void> {
    const unfollow = followSignal(this.#signal, this.#controller);
    try {
      if (this.#driver.preflightError !== undefined) throw this.#driver.preflightError;
      let results: readonly ToolResult[] = [];
      for (let index = 0; ; index += 1) {
        const response = await this.#exchange(results, index);
        const truncated = response.stopReason === 'length' || response.stopReason === 'content_filter';
        if (response.toolCalls.length === 0 || truncated) {
          this.#finish(response.text, response.stopReason);
          return;
        }
        results = await this.#collect(response.toolCalls);
        // Cleared only now: an answer repeated until then is a duplicate, not an unknown call.
        this.clearPending();
        if (this.#stopped) {
          this.#finish(response.text, 'tool_calls');
          return;
        }
      }
    } catch (error) {
      const builder = this.#context.request;
      const request = builder === undefined ? undefined : this.#context.requestReceipt(builder);
      const kept = this.#context.streamedChars - this.#context.emittedChars;
      this.#queue.push({
        type: 'error',
        error: this.#failure(error),
        receipt: this.#receipt.build(),
        ...(request === undefined ? {} : { request }),
        ...(request !== undefined && kept > 0 ? { keptOutputChars: kept } : {}),
        ...(request !== undefined && this.#context.requestUnsent ? { unsent: true } : {}),
      });
    } finally {
      unfollow();
      this.#queue.end();
    }
  }

  #finish(text: string, stopReason: StopReason): void {
    this.#queue.push({ type: 'completed', text, stopReason, receipt: this.#receipt.build() });
  }

  async #exchange(results: readonly ToolResult[], index: number): Promise<ModelResponse> {
    const request = new ReceiptBuilder(this.#driver.provider, this.#driver.model, this.#driver.price);
    this.#context.startRequest(request);
    const started = performance.now();
    let response: ModelResponse;
    try {
      response = await this.#driver.exchange(results, this.#context);
    } finally {
      const latencyMs = performance.now() - started;
      this.#receipt.addRequest(latencyMs);
      request.addRequest(latencyMs);
    }
    if (response.toolCalls.length > MAX_TOOL_CALLS_PER_RESPONSE) {
      throw providerError(
        'response_too_large',
        `${this.#driver.provider} answered with ${response.toolCalls.length} tool calls in one response; at most ${MAX_TOOL_CALLS_PER_RESPONSE} are run.`,
        { provider: this.#driver.provider },
        { maxToolCalls: MAX_TOOL_CALLS_PER_RESPONSE, toolCalls: response.toolCalls.length },
      );
    }
    this.#checkToolCallNames(response.toolCalls);
    const truncated = response.stopReason === 'length' || response.stopReason === 'content_filter';
    this.#context.request = undefined;
    this.#context.emitted += 1;
    this.#queue.push({
      type: 'response',
      index,
      text: response.text,
      toolCalls: truncated ? [] : response.toolCalls,
      stopReason: response.stopReason,
      receipt: this.#context.requestReceipt(request),
    });
    return response;
  }

  /** Throws `response_too_large` for a tool call whose name or id is past {@link MAX_TOOL_CALL_NAME_CHARS}. */
  #checkToolCallNames(calls: readonly ToolCall[]): void {
    for (const call of calls) {
      const [what, chars] =
        call.name.length > MAX_TOOL_CALL_NAME_CHARS
          ? ['name', call.name.length]
          : call.id.length > MAX_TOOL_CALL_NAME_CHARS
            ? ['id', call.id.length]
            : [undefined, 0];
      if (what === undefined) continue;
      throw providerError(
        'response_too_large',
        `${this.#driver.provider} answered with a tool call whose ${what} is ${chars} characters long (it starts ${JSON.stringify(`${(what === 'name' ? call.name : call.id).slice(0, 40)}...`)}); at most ${MAX_TOOL_CALL_NAME_CHARS} are accepted.`,
        { provider: this.#driver.provider },
        {
          maxToolCallNameChars: MAX_TOOL_CALL_NAME_CHARS,
          [what === 'name' ? 'toolNameChars' : 'toolCallIdChars']: chars,
        },
      );
    }
  }

  /** Throws `response_too_large` once a request's output passes the bound. */
  checkOutput(outputChars: number): void {
    if (outputChars > this.#maxOutputChars) {
      throw providerError(
        'response_too_large',
        `${this.#driver.provider} streamed more than ${this.#maxOutputChars} characters of output in one response; it was cut off.`,
        { provider: this.#driver.provider },
        { maxOutputChars: this.#maxOutputChars },
      );
    }
  }

  async withTimeout<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const { timeoutMs } = this.#driver;
    const turnSignal = this.#controller.signal;
    if (timeoutMs === undefined) return work(turnSignal);
    const controller = new AbortController();
    const unfollow = followSignal(turnSignal, controller);
    let timedOut = false;
    // A request's own limit is checked nowhere: past the longest timer delay Node fires at once.
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${timeoutMs} ms`));
    }, timerDelay(timeoutMs));
    try {
      return await work(controller.signal);
    } catch (error) {
      throw timedOut && !turnSignal.aborted ? this.#timeoutError(timeoutMs) : error;
    } finally {
      clearTimeout(timer);
      unfollow();
    }
  }

  /** Not an async function: a parked agent's turn waits here, and a suspended frame costs it. */
  #collect(calls: readonly ToolCall[]): Promise<ToolResult[]> {
    const pending = new Map<string, PendingCall>();
    for (const call of calls) {
      if (pending.has(call.id)) {
        throw providerError('bad_response', `The model used the tool call id ${call.id} twice.`, {
          provider: this.#driver.provider,
        });
      }
      pending.set(call.id, { name: call.name, result: undefined });
    }
    this.#pending = pending;
    for (const call of calls) {
      this.#context.emitted += 1;
      this.#queue.push({ type: 'tool_call', ...call });
    }
    const signal = this.#controller.signal;
    if (signal.aborted) {
      this.clearPending();
      return Promise.reject(signal.reason);
    }
    return new Promise<ToolResult[]>((resolve, reject) => {
      const wait = new AnswersWait(this, signal, calls, pending, resolve, reject);
      this.#answers = wait;
      signal.addEventListener('abort', wait);
    });
  }

  /** The answers are in, or the turn was cancelled: no call is pending any more. */
  clearPending(): void {
    this.#pending = undefined;
    this.#answers = undefined;
  }

  #timeoutError(timeoutMs: number): ProviderError {
    return providerError(
      'timeout',
      `${this.#driver.provider} did not finish a request within ${timeoutMs} ms.`,
      { provider: this.#driver.provider },
      { timeoutMs },
    );
  }

  /**
   * The terminal error, masked as the journal masks it: a server's error text can echo the request's
   * credentials (a 401 body quoting the `authorization` header, a redirect's location), and a
   * program that logs `event.error` of a turn must not print its key.
   */
  #failure(error: unknown): SerializedError {
    return redactValue(this.#unmaskedFailure(error));
  }

  #unmaskedFailure(error: unknown): SerializedError {
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
