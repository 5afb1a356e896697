/**
 * Provider admission on the supervisor: one waiting line per provider key (see admission-lanes.ts),
 * shared by every agent on every thread. Hosts hold a slot for the duration of one HTTP request.
 *
 * Requests are callbacks rather than promises: the admission server grants hundreds of slots per
 * event-loop turn, and a promise (plus an async function) per request showed up in profiles.
 */
import type { ProviderLimits } from '../../protocol/messages.ts';
import { Gate, type Lane, type LaneEntry, RateLane } from './admission-lanes.ts';

const MINUTE_MS = 60_000;

const noop = (): void => {};

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
  readonly lane: Lane;
  readonly tokens: TokenWindow | undefined;
  /** Started requests waiting for room in the token budget. */
  readonly metering: Set<SlotRequest>;
  pausedUntil: number;
  resumeTimer: NodeJS.Timeout | undefined;
}

/** Hands out a grant id for a started request and tells its owner. */
type Grant = (finish: () => void, onGranted: (grantId: number) => void) => void;

/**
 * One request for a slot, from {@link Admission.acquire} until it is granted or cancelled. While it
 * waits it is an entry in its key's lane; once started it takes one of the key's concurrency
 * places (and, with a token budget, may still wait for tokens) until it is released.
 */
export class SlotRequest implements LaneEntry {
  readonly id: number;
  #phase: 'queued' | 'metering' | 'granted' | 'cancelled';
  readonly #key: KeyState | undefined;
  readonly #estimatedTokens: number;
  readonly #onGranted: (grantId: number) => void;
  readonly #grant: Grant;
  #timer: NodeJS.Timeout | undefined;
  /** Gives the concurrency place back. */
  #finish: () => void = noop;

  /** @internal Created by {@link Admission.acquire}. */
  constructor(
    id: number,
    key: KeyState | undefined,
    estimatedTokens: number,
    onGranted: (grantId: number) => void,
    grant: Grant,
  ) {
    this.id = id;
    this.#key = key;
    this.#estimatedTokens = estimatedTokens;
    this.#onGranted = onGranted;
    this.#grant = grant;
    this.#phase = 'queued';
  }

  /** True once the request holds a slot (it is then given back by its grant id, not cancelled). */
  get granted(): boolean {
    return this.#phase === 'granted';
  }

  /**
   * Withdraws a request that has no slot yet. One still queued leaves without counting against any
   * limit; one already started and waiting for tokens gives its concurrency place back. Returns
   * false, doing nothing, when the request was already granted (release its grant instead) or
   * cancelled.
   */
  cancel(): boolean {
    const key = this.#key;
    if (this.#phase === 'queued') {
      key?.lane.remove(this);
    } else if (this.#phase === 'metering') {
      clearTimeout(this.#timer);
      key?.metering.delete(this);
      this.#finish();
    } else {
      return false;
    }
    this.#phase = 'cancelled';
    return true;
  }

  /** @internal The lane gave the request a place: charge its tokens (waiting for room), then grant. */
  start(finish: () => void): void {
    this.#finish = finish;
    this.#phase = 'metering';
    this.#meter();
  }

  #meter(): void {
    const key = this.#key;
    if (key?.tokens) {
      const delay = key.tokens.delayFor(this.#estimatedTokens, Date.now());
      if (delay > 0) {
        key.metering.add(this);
        this.#timer = setTimeout(() => {
          key.metering.delete(this);
          this.#meter();
        }, delay);
        return;
      }
      key.tokens.add(this.#estimatedTokens, Date.now());
    }
    this.#phase = 'granted';
    this.#grant(this.#finish, this.#onGranted);
  }
}

/** Rate limits per provider key, with a shared pause after a 429. */
export class Admission {
  readonly #keys = new Map<string, KeyState>();
  /** Granted slots by grant id: the function that gives each one's place back. */
  readonly #held = new Map<number, () => void>();
  #nextGrant = 1;
  #nextRequest = 1;
  readonly #onBackoff: (key: string, retryAfterMs: number) => void;
  readonly #grant: Grant = (finish, onGranted) => {
    const grantId = this.#nextGrant++;
    this.#held.set(grantId, finish);
    onGranted(grantId);
  };

  constructor(
    limits: Readonly<Record<string, ProviderLimits>>,
    onBackoff: (key: string, ms: number) => void,
  ) {
    this.#onBackoff = onBackoff;
    for (const [key, limit] of Object.entries(limits)) {
      const concurrency = limit.concurrency ?? Number.POSITIVE_INFINITY;
      this.#keys.set(key, {
        lane: limit.requestsPerInterval
          ? new RateLane(concurrency, limit.requestsPerInterval)
          : new Gate(concurrency),
        tokens: limit.tokensPerMinute === undefined ? undefined : new TokenWindow(limit.tokensPerMinute),
        metering: new Set(),
        pausedUntil: 0,
        resumeTimer: undefined,
      });
    }
  }

  /** Keys that have limits; hosts skip the round trip for every other key. */
  get keys(): string[] {
    return [...this.#keys.keys()];
  }

  /**
   * Asks for a slot on `key`; `onGranted` is called with the grant id once a request may start
   * (synchronously when one is free now). Higher `priority` goes first (agents on later rounds are
   * closer to finishing). A key without limits is granted at once.
   */
  acquire(
    key: string,
    priority: number,
    estimatedTokens: number,
    onGranted: (grantId: number) => void,
  ): SlotRequest {
    const state = this.#keys.get(key);
    const request = new SlotRequest(this.#nextRequest++, state, estimatedTokens, onGranted, this.#grant);
    if (state === undefined) request.start(noop);
    else state.lane.enqueue(request, priority);
    return request;
  }

  /** Ends the request that holds `grantId`. Unknown ids are ignored (already released). */
  release(grantId: number): void {
    const finish = this.#held.get(grantId);
    if (finish === undefined) return;
    this.#held.delete(grantId);
    finish();
  }

  /** Pauses `key` for everyone: no new request on it starts before `retryAfterMs` from now. */
  backoff(key: string, retryAfterMs: number): void {
    const state = this.#keys.get(key);
    if (state === undefined) return;
    const until = Date.now() + retryAfterMs;
    if (until <= state.pausedUntil) return;
    state.pausedUntil = until;
    state.lane.pause();
    if (state.resumeTimer) clearTimeout(state.resumeTimer);
    state.resumeTimer = setTimeout(() => {
      state.resumeTimer = undefined;
      state.lane.resume();
    }, retryAfterMs);
    this.#onBackoff(key, retryAfterMs);
  }

  /** Time at which `key` resumes after a backoff (0 when not paused). */
  pausedUntil(key: string): number {
    return this.#keys.get(key)?.pausedUntil ?? 0;
  }

  /** Drops every waiting request and releases every slot and timer. */
  close(): void {
    for (const state of this.#keys.values()) {
      if (state.resumeTimer) clearTimeout(state.resumeTimer);
      // Cleared first: a metering request that gives its place back must not start another.
      state.lane.clear();
      for (const request of [...state.metering]) request.cancel();
    }
    for (const id of [...this.#held.keys()]) this.release(id);
  }
}
