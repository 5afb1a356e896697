/**
 * Provider admission on the supervisor: one p-queue per provider key, shared by every agent on every
 * thread. Hosts hold a slot for the duration of one HTTP request.
 */
import PQueue from 'p-queue';

/** Limits for one provider key. Omitted fields are unlimited. */
export interface ProviderLimits {
  /** Requests in flight at once. */
  readonly concurrency?: number;
  /** At most `count` requests start in any rolling `intervalMs` window. */
  readonly requestsPerInterval?: { readonly count: number; readonly intervalMs: number };
  /** Estimated input tokens admitted per rolling minute. */
  readonly tokensPerMinute?: number;
}

interface Slot {
  readonly key: string;
  readonly release: () => void;
}

const MINUTE_MS = 60_000;

/** A sliding one-minute window of admitted tokens. */
class TokenWindow {
  readonly #limit: number;
  readonly #entries: { at: number; tokens: number }[] = [];
  #total = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Milliseconds until `tokens` fit in the window (0 when they fit now). */
  delayFor(tokens: number, now: number): number {
    this.#expire(now);
    // A single request larger than the whole budget is admitted alone rather than never.
    if (this.#total + tokens <= this.#limit || this.#total === 0) return 0;
    let excess = this.#total + tokens - this.#limit;
    for (const entry of this.#entries) {
      excess -= entry.tokens;
      if (excess <= 0) return Math.max(1, entry.at + MINUTE_MS - now);
    }
    return MINUTE_MS;
  }

  add(tokens: number, now: number): void {
    this.#entries.push({ at: now, tokens });
    this.#total += tokens;
  }

  #expire(now: number): void {
    while (this.#entries.length > 0) {
      const first = this.#entries[0];
      if (first === undefined || first.at + MINUTE_MS > now) break;
      this.#entries.shift();
      this.#total -= first.tokens;
    }
  }
}

interface KeyState {
  readonly queue: PQueue;
  readonly tokens: TokenWindow | undefined;
  pausedUntil: number;
  resumeTimer: NodeJS.Timeout | undefined;
}

/** Rate limits per provider key, with a shared pause after a 429. */
export class Admission {
  readonly #keys = new Map<string, KeyState>();
  readonly #slots = new Map<number, Slot>();
  #nextGrant = 1;
  readonly #onBackoff: (key: string, retryAfterMs: number) => void;

  constructor(
    limits: Readonly<Record<string, ProviderLimits>>,
    onBackoff: (key: string, ms: number) => void,
  ) {
    this.#onBackoff = onBackoff;
    for (const [key, limit] of Object.entries(limits)) {
      const queue = new PQueue({
        concurrency: limit.concurrency ?? Number.POSITIVE_INFINITY,
        ...(limit.requestsPerInterval
          ? {
              intervalCap: limit.requestsPerInterval.count,
              interval: limit.requestsPerInterval.intervalMs,
              strict: true,
            }
          : {}),
      });
      const tokens = limit.tokensPerMinute === undefined ? undefined : new TokenWindow(limit.tokensPerMinute);
      this.#keys.set(key, { queue, tokens, pausedUntil: 0, resumeTimer: undefined });
    }
  }

  /** Keys that have limits; hosts skip the round trip for every other key. */
  get keys(): string[] {
    return [...this.#keys.keys()];
  }

  /**
   * Resolves with a grant id once a request on `key` may start. Higher `priority` goes first
   * (agents on later rounds are closer to finishing).
   */
  async acquire(key: string, priority: number, estimatedTokens: number): Promise<number> {
    const state = this.#keys.get(key);
    const grantId = this.#nextGrant++;
    if (state === undefined) {
      this.#slots.set(grantId, { key, release: () => {} });
      return grantId;
    }
    let markStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      markStarted = resolve;
    });
    void state.queue.add(
      async () => {
        if (state.tokens) {
          for (;;) {
            const delay = state.tokens.delayFor(estimatedTokens, Date.now());
            if (delay === 0) break;
            await new Promise((resolve) => setTimeout(resolve, delay));
          }
          state.tokens.add(estimatedTokens, Date.now());
        }
        await new Promise<void>((release) => {
          this.#slots.set(grantId, { key, release });
          markStarted();
        });
      },
      { priority },
    );
    await started;
    return grantId;
  }

  /** Ends the request that holds `grantId`. Unknown ids are ignored (the host may have crashed). */
  release(grantId: number): void {
    const slot = this.#slots.get(grantId);
    if (slot === undefined) return;
    this.#slots.delete(grantId);
    slot.release();
  }

  /** Pauses `key` for everyone: no new request on it starts before `retryAfterMs` from now. */
  backoff(key: string, retryAfterMs: number): void {
    const state = this.#keys.get(key);
    if (state === undefined) return;
    const until = Date.now() + retryAfterMs;
    if (until <= state.pausedUntil) return;
    state.pausedUntil = until;
    state.queue.pause();
    if (state.resumeTimer) clearTimeout(state.resumeTimer);
    state.resumeTimer = setTimeout(() => {
      state.resumeTimer = undefined;
      state.queue.start();
    }, retryAfterMs);
    this.#onBackoff(key, retryAfterMs);
  }

  /** Time at which `key` resumes after a backoff (0 when not paused). */
  pausedUntil(key: string): number {
    return this.#keys.get(key)?.pausedUntil ?? 0;
  }

  /** Releases every slot and timer. */
  close(): void {
    for (const state of this.#keys.values()) {
      if (state.resumeTimer) clearTimeout(state.resumeTimer);
      state.queue.clear();
    }
    for (const id of [...this.#slots.keys()]) this.release(id);
  }
}
