/** Accumulates a turn's receipt over its model requests. */
import { RETRY_LOG_MAX } from './constants.ts';
import { costOf, type ModelPrice } from './pricing.ts';
import type { Receipt, RetryRecord, Usage } from './types.ts';

/** Usage with every count at zero. */
export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
});

/** Sums two usages; the sum is `estimated` when either part is. */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    ...(a.estimated === true || b.estimated === true ? { estimated: true } : {}),
  };
}

/** Mutable receipt under construction; {@link ReceiptBuilder.build} freezes a snapshot. */
export class ReceiptBuilder {
  readonly #provider: string;
  readonly #model: string;
  readonly #price: ModelPrice | undefined;
  #requests = 0;
  #usage: Usage = ZERO_USAGE;
  #requestsWithUsage = 0;
  #latencyMs = 0;
  #httpStatus: number | undefined;
  #retries = 0;
  readonly #retryLog: RetryRecord[] = [];
  #queuedMs = 0;
  readonly #startedAt: number;
  readonly #now: () => number;

  constructor(
    provider: string,
    model: string,
    price: ModelPrice | undefined,
    now: () => number = () => performance.now(),
  ) {
    this.#provider = provider;
    this.#model = model;
    this.#price = price;
    this.#now = now;
    this.#startedAt = now();
  }

  /** Counts one model request and the time it took. */
  addRequest(latencyMs: number): void {
    this.#requests += 1;
    this.#latencyMs += latencyMs;
  }

  /** Adds the usage one request reported. */
  addUsage(usage: Usage): void {
    this.#usage = addUsage(this.#usage, usage);
    this.#requestsWithUsage += 1;
  }

  setHttpStatus(status: number): void {
    this.#httpStatus = status;
  }

  /** Counts a retried attempt; with `detail`, describes it in `retryLog` (the first RETRY_LOG_MAX). */
  addRetry(detail?: Omit<RetryRecord, 'atMs'>): void {
    this.#retries += 1;
    if (detail !== undefined && this.#retryLog.length < RETRY_LOG_MAX)
      this.#retryLog.push({ atMs: Math.round(this.#now() - this.#startedAt), ...detail });
  }

  /** Adds time spent waiting for a provider slot. */
  addQueued(ms: number): void {
    if (Number.isFinite(ms) && ms > 0) this.#queuedMs += ms;
  }

  build(): Receipt {
    const usageComplete = this.#requests > 0 && this.#requestsWithUsage >= this.#requests;
    return {
      provider: this.#provider,
      model: this.#model,
      requests: this.#requests,
      usage: this.#usage,
      latencyMs: Math.round(this.#latencyMs),
      httpStatus: this.#httpStatus,
      retries: this.#retries,
      costUsd: this.#price !== undefined && usageComplete ? costOf(this.#usage, this.#price) : undefined,
      requestsWithoutUsage: Math.max(0, this.#requests - this.#requestsWithUsage),
      ...(this.#retryLog.length > 0 ? { retryLog: [...this.#retryLog] } : {}),
      ...(this.#queuedMs >= 1 ? { queuedMs: Math.round(this.#queuedMs) } : {}),
    };
  }
}
