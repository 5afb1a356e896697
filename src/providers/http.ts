/**
 * POSTs a model request with admission, retries and backoff. A failed attempt is retried only
 * while none of its output has reached the consumer, so a retry never duplicates events.
 */
import type { RetryPolicy } from '../definition/types.ts';
import { isTroupeError, type ProviderError } from '../errors.ts';
import {
  INPUT_TOKEN_OVERHEAD,
  MAX_EVENT_BYTES,
  MAX_HONOURED_RETRY_AFTER_MS,
  OUTPUT_TOKEN_SLACK,
  RETRY_JITTER,
} from './constants.ts';
import { estimateTokens } from './estimate.ts';
import { parseJson } from './json-shapes.ts';
import {
  bodyExcerpt,
  type ErrorOrigin,
  errorFromForeignAnswer,
  errorFromResponse,
  inParentheses,
  isRetryable,
  networkError,
  providerError,
} from './provider-error.ts';
import type { ExchangeContext } from './turn-runner.ts';
import type { AdmissionRelease, ProviderHooks, Usage } from './types.ts';

/** Options every HTTP provider accepts besides its own. */
export interface HttpProviderOptions extends ProviderHooks {
  /**
   * Retries of a failed request (408, 409, 429, 5xx, connection failures): an integer from 0 to 1000
   * (`MAX_PROVIDER_RETRIES`). @default 2
   */
  readonly maxRetries?: number;
  /** First backoff; from 0 to 2147483647 (`MAX_TIMER_MS`). @default 500 */
  readonly retryBaseDelayMs?: number;
  /** Longest backoff; from 0 to 2147483647 (`MAX_TIMER_MS`). @default 8000 */
  readonly retryMaxDelayMs?: number;
  /**
   * Timeout of one model request (one HTTP attempt, from admission to the last byte) when the turn
   * request gives none. @default 600000
   */
  readonly timeoutMs?: number;
  /**
   * Longest silence in a request: until the response headers, and between body chunks. A stalled
   * stream ends with `timeout` (`fields.idleTimeoutMs`). @default 120000
   */
  readonly idleTimeoutMs?: number;
  /** Bytes of one response body read at most; more ends the request with `response_too_large`. @default 32 MiB */
  readonly maxResponseBytes?: number;
  /**
   * Characters of output (text, reasoning, tool-call arguments) one request may stream; more ends
   * it with `response_too_large`. @default 2000000
   */
  readonly maxOutputChars?: number;
  /** Extra HTTP headers sent with every request. @default {} */
  readonly headers?: Readonly<Record<string, string>>;
  /** Sleep used between retries; tests inject a fake one. @default a timer that honours the signal */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Random source for jitter, in [0, 1). @default Math.random */
  readonly random?: () => number;
}

/** The prepared HTTP settings of a provider. */
export interface HttpClient extends ProviderHooks {
  readonly provider: string;
  readonly retry: RetryPolicy;
  /** Default request timeout when the turn request gives none. */
  readonly timeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly maxOutputChars: number;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random: () => number;
}

/** One model request to send. */
export interface HttpRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly model: string;
  readonly estimatedInputTokens: number;
  /**
   * The most input tokens the server can truly have counted: the body's UTF-8 bytes plus
   * {@link INPUT_TOKEN_OVERHEAD}. A larger reported count is read as no count (`plausibleUsage`).
   */
  readonly maxInputTokens: number;
  /**
   * The most output tokens the server can truly have counted when the request capped its output:
   * the cap plus {@link OUTPUT_TOKEN_SLACK}. Undefined without a cap: the output count is then
   * bounded by what streamed (`uncappedOutputBound` in receipt.ts).
   */
  readonly maxOutputTokens: number | undefined;
}

/**
 * A JSON POST of `payload` to `url`, sized for token-per-minute admission; `outputCap` is the
 * output limit the payload sends, if any.
 */
export function jsonRequest(
  url: string,
  headers: Readonly<Record<string, string>>,
  payload: unknown,
  model: string,
  outputCap?: number,
): HttpRequest {
  const body = JSON.stringify(payload);
  return {
    url,
    headers,
    body,
    model,
    estimatedInputTokens: estimateTokens(body.length),
    maxInputTokens: Buffer.byteLength(body, 'utf8') + INPUT_TOKEN_OVERHEAD,
    maxOutputTokens: outputCap === undefined ? undefined : outputCap + OUTPUT_TOKEN_SLACK,
  };
}

/**
 * The wait before retry number `attempt + 1`: the server's retry-after when it gave one, else
 * `baseDelayMs * 2^attempt` capped at `maxDelayMs`, minus up to 25% at random.
 */
export function backoffDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  policy: RetryPolicy,
  random: () => number,
): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  // From attempt 1024 on 2^attempt is Infinity, and 0 * Infinity is NaN: a base of 0 is 0.
  const computed =
    policy.baseDelayMs === 0 ? 0 : Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(computed * (1 - RETRY_JITTER * random()));
}

/**
 * Sends `request`, then hands the response to `read`, retrying retryable failures of either step
 * while `ctx` shows no event emitted since the attempt began.
 */
export async function postWithRetries<T extends { readonly usage: Usage | undefined }>(
  client: HttpClient,
  request: HttpRequest,
  ctx: ExchangeContext,
  read: (response: Response, reading: ResponseReading) => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    const emittedBefore = ctx.emittedCount();
    const decide = (error: unknown): { retryAfterMs: number | undefined; willRetry: boolean } | undefined => {
      if (ctx.signal.aborted || !isTroupeError(error)) return undefined;
      const retryAfter = error.fields.retryAfterMs;
      const retryAfterMs = typeof retryAfter === 'number' ? retryAfter : undefined;
      const willRetry =
        attempt < client.retry.maxRetries &&
        isRetryable(error) &&
        ctx.emittedCount() === emittedBefore &&
        (retryAfterMs === undefined || retryAfterMs <= MAX_HONOURED_RETRY_AFTER_MS);
      return { retryAfterMs, willRetry };
    };
    // Called before the admission slot is released, so a shared limiter is paused before the next
    // waiting request can take the slot.
    const onFailure = (error: unknown): void => {
      const decision = decide(error);
      if (!decision || !isTroupeError(error) || error.code !== 'rate_limited') return;
      const status = typeof error.fields.status === 'number' ? error.fields.status : undefined;
      client.onRateLimited?.(decision.retryAfterMs, {
        provider: client.provider,
        model: request.model,
        status,
        willRetry: decision.willRetry,
      });
    };
    try {
      return await attemptOnce(client, request, ctx, read, onFailure);
    } catch (error) {
      const decision = decide(error);
      if (!decision) throw error;
      const { retryAfterMs, willRetry } = decision;
      if (!willRetry) {
        if (
          retryAfterMs !== undefined &&
          retryAfterMs > MAX_HONOURED_RETRY_AFTER_MS &&
          isTroupeError(error)
        ) {
          // Else the message read like any 429, with no word of why it was not retried.
          error.message += ` (it asked to wait ${describeWait(retryAfterMs)}, longer than the ${MAX_HONOURED_RETRY_AFTER_MS / 1000} s a request waits: try again later)`;
        }
        throw error;
      }
      const delayMs = backoffDelay(attempt, retryAfterMs, client.retry, client.random);
      const status = isTroupeError(error) ? error.fields.status : undefined;
      ctx.reportRetry({
        code: isTroupeError(error) ? error.code : 'unknown',
        ...(typeof status === 'number' ? { status } : {}),
        delayMs,
      });
      await client.sleep(delayMs, ctx.signal);
    }
  }
}

async function attemptOnce<T extends { readonly usage: Usage | undefined }>(
  client: HttpClient,
  request: HttpRequest,
  ctx: ExchangeContext,
  read: (response: Response, reading: ResponseReading) => Promise<T>,
  onFailure: (error: unknown) => void,
): Promise<T> {
  const ticket = {
    provider: client.provider,
    model: request.model,
    estimatedInputTokens: request.estimatedInputTokens,
  };
  const queuedFrom = performance.now();
  let release: AdmissionRelease | undefined;
  try {
    release = await client.admission?.acquire(ticket, ctx.signal);
  } catch (error) {
    ctx.reportNotSent();
    throw error;
  }
  if (release !== undefined) ctx.reportQueued(performance.now() - queuedFrom);
  let usage: Usage | undefined;
  try {
    const result = await ctx.withTimeout(async (signal) => {
      const watch = new ResponseWatch(client, request.url, signal);
      try {
        let response: Response;
        try {
          response = await fetch(request.url, {
            method: 'POST',
            headers: request.headers,
            body: request.body,
            signal: watch.signal,
            // Never followed: fetch strips only `authorization` on a redirect to another origin, so
            // Anthropic's `x-api-key` and any key in `headers` would go to wherever it points.
            redirect: 'manual',
          });
        } catch (error) {
          if (watch.signal.aborted) throw watch.failure() ?? error;
          throw networkError({ provider: client.provider, url: request.url }, error);
        }
        watch.received(0);
        ctx.reportHttpStatus(response.status);
        if (response.status >= 300 && response.status < 400) throw redirectError(client, request, response);
        if (!response.ok) throw await errorFromResponse(client.provider, response, request.url);
        return await read(response, watch);
      } catch (error) {
        throw watch.failure() ?? error;
      } finally {
        watch.dispose();
      }
    });
    usage = result.usage;
    return result;
  } catch (error) {
    onFailure(error);
    throw error;
  } finally {
    release?.(usage);
  }
}

/**
 * A redirect answer: not followed (the request's credentials would go with it), not retried. The
 * body is discarded unread.
 */
function redirectError(client: HttpClient, request: HttpRequest, response: Response): ProviderError {
  void response.body?.cancel().catch(() => undefined);
  const location = response.headers.get('location');
  const where = location === null ? '' : ` to ${location}`;
  return providerError(
    'bad_request',
    `${client.provider} answered HTTP ${response.status}, a redirect${where}${inParentheses(request.url)}; redirects are not followed, so the API key never goes anywhere else: set the base URL to the address the server names.`,
    { provider: client.provider, url: request.url, status: response.status },
    { location: location ?? undefined },
  );
}

/** A server's wait as a person reads it: `120 s`, `27.8 h`. */
function describeWait(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 3600) return `${Math.round(seconds)} s`;
  const hours = seconds / 3600;
  return hours < 48 ? `${hours.toFixed(1)} h` : `${Math.round(hours / 24)} days`;
}

/**
 * Refuses at once a successful answer whose content type is neither an event stream nor JSON (an
 * HTML login page, say), quoting the start of its body; read as a stream, it only ended in "the
 * stream ended early". A missing content type is read as a stream.
 */
export async function refuseForeignAnswer(response: Response, origin: ErrorOrigin): Promise<void> {
  const type = response.headers.get('content-type') ?? '';
  if (type === '' || type.includes('text/event-stream') || type.includes('application/json')) return;
  throw await errorFromForeignAnswer(origin, response, type);
}

/** True when the response is a complete JSON document rather than an event stream. */
export function isJsonResponse(response: Response): boolean {
  const type = response.headers.get('content-type') ?? '';
  return type.includes('application/json') && !type.includes('text/event-stream');
}

/** What a response reader reports as the body arrives, and the signal it reads under. */
export interface ResponseReading {
  /** Aborts with the request (cancellation, the request timeout, the idle timeout). */
  readonly signal: AbortSignal;
  /**
   * Counts `bytes` just read from the body: restarts the idle timer, and throws
   * `response_too_large` once the body passes `maxResponseBytes`.
   */
  received(bytes: number): void;
}

/**
 * Watches one HTTP attempt: an idle timer restarted by every chunk, and the running byte count.
 * Its signal follows the attempt's and also aborts when the server goes silent.
 */
class ResponseWatch implements ResponseReading {
  readonly #controller = new AbortController();
  readonly #client: HttpClient;
  readonly #url: string;
  readonly #parent: AbortSignal;
  readonly #onParentAbort = (): void => this.#controller.abort(this.#parent.reason);
  #timer: ReturnType<typeof setTimeout> | undefined;
  #bytes = 0;
  #failure: unknown;

  constructor(client: HttpClient, url: string, parent: AbortSignal) {
    this.#client = client;
    this.#url = url;
    this.#parent = parent;
    if (parent.aborted) this.#controller.abort(parent.reason);
    else parent.addEventListener('abort', this.#onParentAbort, { once: true });
    this.#arm();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  received(bytes: number): void {
    // A flood arrives faster than any timer fires: the deadline is checked on every chunk too.
    if (this.#controller.signal.aborted) throw this.failure() ?? this.#controller.signal.reason;
    this.#bytes += bytes;
    if (this.#bytes > this.#client.maxResponseBytes) {
      this.#fail(
        providerError(
          'response_too_large',
          `${this.#client.provider} sent more than ${this.#client.maxResponseBytes} bytes in one response; it was cut off.`,
          { provider: this.#client.provider, url: this.#url },
          { maxResponseBytes: this.#client.maxResponseBytes },
        ),
      );
      throw this.#failure;
    }
    this.#arm();
  }

  /** Why the watch ended the attempt (idle timeout, size), if it did. */
  failure(): unknown {
    return this.#failure;
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#parent.removeEventListener('abort', this.#onParentAbort);
  }

  #arm(): void {
    clearTimeout(this.#timer);
    const idleMs = this.#client.idleTimeoutMs;
    this.#timer = setTimeout(() => {
      this.#fail(
        providerError(
          'timeout',
          `${this.#client.provider} sent nothing for ${idleMs} ms; the request was abandoned.`,
          { provider: this.#client.provider, url: this.#url },
          { idleTimeoutMs: idleMs },
        ),
      );
    }, idleMs);
  }

  #fail(error: unknown): void {
    this.#failure ??= error;
    clearTimeout(this.#timer);
    this.#controller.abort(this.#failure);
  }
}

/**
 * Reads a whole JSON body under the attempt's bounds (Python's `NaN` and `Infinity` are read as
 * null: {@link parseJson}); one that does not parse is a `bad_response`, one larger than {@link MAX_EVENT_BYTES} or `maxResponseBytes` is
 * `response_too_large`.
 */
export async function readJsonBody(
  response: Response,
  origin: ErrorOrigin,
  reading: ResponseReading,
): Promise<unknown> {
  const parts: Uint8Array[] = [];
  let size = 0;
  if (response.body !== null) {
    const reader = response.body.getReader();
    let finished = false;
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (reading.signal.aborted) throw reading.signal.reason;
          throw networkError(origin, error);
        }
        if (chunk.done) break;
        reading.received(chunk.value.byteLength);
        size += chunk.value.byteLength;
        if (size > MAX_EVENT_BYTES) {
          throw providerError(
            'response_too_large',
            `${origin.provider} sent a JSON body larger than ${MAX_EVENT_BYTES} bytes${inParentheses(origin.url)}; it was cut off.`,
            origin,
            { maxEventBytes: MAX_EVENT_BYTES },
          );
        }
        parts.push(chunk.value);
      }
      finished = true;
    } finally {
      if (!finished) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
  }
  const text = new TextDecoder().decode(Buffer.concat(parts));
  try {
    return parseJson(text);
  } catch (error) {
    const type = response.headers.get('content-type') ?? '(none)';
    throw providerError(
      'bad_response',
      `${origin.provider} answered HTTP ${response.status} with content-type ${type}${inParentheses(origin.url)}, but its JSON body does not parse: ${bodyExcerpt(text)}`,
      origin,
      { contentType: type },
      error,
    );
  }
}
