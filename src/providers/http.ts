/**
 * POSTs a model request with admission, retries and backoff. A failed attempt is retried only
 * while none of its output has reached the consumer, so a retry never duplicates events.
 */
import type { RetryPolicy } from '../definition/types.ts';
import { isTroupeError } from '../errors.ts';
import { MAX_HONOURED_RETRY_AFTER_MS, RETRY_JITTER } from './constants.ts';
import { estimateTokens } from './estimate.ts';
import {
  type ErrorOrigin,
  errorFromResponse,
  isRetryable,
  networkError,
  providerError,
} from './provider-error.ts';
import type { ExchangeContext } from './turn-runner.ts';
import type { ProviderHooks, Usage } from './types.ts';

/** Options every HTTP provider accepts besides its own. */
export interface HttpProviderOptions extends ProviderHooks {
  /** Retries of a failed request (408, 409, 429, 5xx, connection failures). @default 2 */
  readonly maxRetries?: number;
  /** @default 500 */
  readonly retryBaseDelayMs?: number;
  /** @default 8000 */
  readonly retryMaxDelayMs?: number;
  /** Timeout of one model request when the turn request gives none. @default 600000 */
  readonly timeoutMs?: number;
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
}

/** A JSON POST of `payload` to `url`, sized for token-per-minute admission. */
export function jsonRequest(
  url: string,
  headers: Readonly<Record<string, string>>,
  payload: unknown,
  model: string,
): HttpRequest {
  const body = JSON.stringify(payload);
  return { url, headers, body, model, estimatedInputTokens: estimateTokens(body.length) };
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
  const computed = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
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
  read: (response: Response, signal: AbortSignal) => Promise<T>,
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
      if (!willRetry) throw error;
      ctx.reportRetry();
      await client.sleep(backoffDelay(attempt, retryAfterMs, client.retry, client.random), ctx.signal);
    }
  }
}

async function attemptOnce<T extends { readonly usage: Usage | undefined }>(
  client: HttpClient,
  request: HttpRequest,
  ctx: ExchangeContext,
  read: (response: Response, signal: AbortSignal) => Promise<T>,
  onFailure: (error: unknown) => void,
): Promise<T> {
  const ticket = {
    provider: client.provider,
    model: request.model,
    estimatedInputTokens: request.estimatedInputTokens,
  };
  const release = await client.admission?.acquire(ticket, ctx.signal);
  let usage: Usage | undefined;
  try {
    const result = await ctx.withTimeout(async (signal) => {
      let response: Response;
      try {
        response = await fetch(request.url, {
          method: 'POST',
          headers: request.headers,
          body: request.body,
          signal,
        });
      } catch (error) {
        if (signal.aborted) throw error;
        throw networkError({ provider: client.provider }, error);
      }
      ctx.reportHttpStatus(response.status);
      if (!response.ok) throw await errorFromResponse(client.provider, response);
      return read(response, signal);
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

/** True when the response is a complete JSON document rather than an event stream. */
export function isJsonResponse(response: Response): boolean {
  const type = response.headers.get('content-type') ?? '';
  return type.includes('application/json') && !type.includes('text/event-stream');
}

/** Reads a whole JSON body; one that does not parse is a `bad_response`. */
export async function readJsonBody(response: Response, origin: ErrorOrigin): Promise<unknown> {
  try {
    return await response.json();
  } catch (error) {
    throw providerError(
      'bad_response',
      `${origin.provider} sent a JSON body that does not parse.`,
      origin,
      {},
      error,
    );
  }
}
