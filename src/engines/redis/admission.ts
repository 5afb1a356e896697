/**
 * Provider admission shared by every worker on every machine: the threads engine's per-key limits
 * (src/engines/threads/admission.ts: concurrency, requests per interval, tokens per minute) kept in
 * Redis and checked atomically by one Lua script on the server's clock, plus the 429 pause: a key
 * with a PX expiry that every `acquire` on that provider honours.
 *
 * A concurrency slot is a lease: a worker that dies holding one loses it after
 * {@link ADMISSION_SLOT_LEASE_MS}. Waiters re-check with a short backoff rather than queueing, so
 * admission among waiters is not strictly first-come; a pause is waited out exactly.
 *
 * A key without limits costs no round trip per request: each process learns of pauses from a
 * pub/sub announcement (and reads the pause key once, the first time it uses the provider key), so
 * a process that misses an announcement while its connection is down may send a request into a
 * pause; the server's next 429 pauses it again.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { sleep } from '../../abort.ts';
import type { ProviderLimits } from '../../protocol/messages.ts';
import type { PauseAnnouncement } from '../../protocol/redis.ts';
import type { AdmissionRelease } from '../../providers/types.ts';
import { ADMISSION_POLL_MAX_MS, ADMISSION_POLL_MIN_MS, ADMISSION_SLOT_LEASE_MS } from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';
import { LuaScript } from './script.ts';

// Replies {0, 0}: admitted; {1, ms}: paused by a 429 for ms; {2, ms}: a limit is full, retry in ms
// (0 = unknown, poll).
const ACQUIRE = new LuaScript(
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local paused = redis.call('PTTL', KEYS[1])
if paused > 0 then return {1, paused} end
local grant = ARGV[1]
local concurrency = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local interval = tonumber(ARGV[4])
local tpm = tonumber(ARGV[5])
local tokens = tonumber(ARGV[6])
local lease = tonumber(ARGV[7])
if concurrency > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= concurrency then return {2, 0} end
end
if count > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - interval)
  if redis.call('ZCARD', KEYS[3]) >= count then
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    return {2, math.max(1, tonumber(oldest[2]) + interval - now)}
  end
end
if tpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 60000)
  local entries = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
  local total = 0
  for i = 1, #entries, 2 do
    total = total + tonumber(string.match(entries[i], ':(%d+)$'))
  end
  -- A single request larger than the whole budget is admitted alone rather than never.
  if total > 0 and total + tokens > tpm then
    local excess = total + tokens - tpm
    for i = 1, #entries, 2 do
      excess = excess - tonumber(string.match(entries[i], ':(%d+)$'))
      if excess <= 0 then return {2, math.max(1, tonumber(entries[i + 1]) + 60000 - now)} end
    end
    return {2, 60000}
  end
end
if concurrency > 0 then
  redis.call('ZADD', KEYS[2], now + lease, grant)
  redis.call('PEXPIRE', KEYS[2], lease)
end
if count > 0 then
  redis.call('ZADD', KEYS[3], now, grant)
  redis.call('PEXPIRE', KEYS[3], interval)
end
if tpm > 0 then
  redis.call('ZADD', KEYS[4], now, grant .. ':' .. tokens)
  redis.call('PEXPIRE', KEYS[4], 60000)
end
return {0, 0}
`,
  4,
);

const PAUSE = new LuaScript(
  `
local ms = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) >= ms then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
return 1
`,
  1,
);

/** What one `acquire` call needs besides the signal. */
export interface AcquireRequest {
  readonly providerKey: string;
  /** The key's limits; undefined = only the 429 pause applies. */
  readonly limits: ProviderLimits | undefined;
  readonly estimatedTokens: number;
  /** Called when the request had to wait for a 429 pause, with how long. */
  readonly onPaused?: (waitMs: number) => void;
}

/** Shared admission on one Redis server. */
export class RedisAdmission {
  readonly #redis: Redis;
  readonly #keys: ScaleoutKeys;
  /** Pauses this process knows of: provider key -> epoch ms (local clock). */
  readonly #pausedUntil = new Map<string, number>();
  readonly #seeded = new Map<string, Promise<void>>();

  constructor(redis: Redis, keys: ScaleoutKeys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /**
   * Resolves with a release function once a request on the key may start; rejects with
   * `signal.reason` when the signal aborts first.
   */
  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<AdmissionRelease> {
    const limits = request.limits;
    if (!limits?.concurrency && !limits?.requestsPerInterval && !limits?.tokensPerMinute) {
      await this.#seed(request.providerKey);
      for (;;) {
        signal.throwIfAborted();
        const wait = (this.#pausedUntil.get(request.providerKey) ?? 0) - Date.now();
        if (wait <= 0) return () => {};
        request.onPaused?.(wait);
        await sleep(wait, signal);
      }
    }
    const keys = this.#keys.limit(request.providerKey);
    const grant = randomUUID();
    let poll = ADMISSION_POLL_MIN_MS;
    for (;;) {
      signal.throwIfAborted();
      const reply = (await ACQUIRE.run(
        this.#redis,
        [keys.pause, keys.slots, keys.requests, keys.tokens],
        [
          grant,
          limits?.concurrency ?? 0,
          limits?.requestsPerInterval?.count ?? 0,
          limits?.requestsPerInterval?.intervalMs ?? 0,
          limits?.tokensPerMinute ?? 0,
          Math.max(0, Math.ceil(request.estimatedTokens)),
          ADMISSION_SLOT_LEASE_MS,
        ],
      )) as [number, number];
      const [verdict, ms] = [Number(reply[0]), Number(reply[1])];
      if (verdict === 0) break;
      if (verdict === 1) {
        request.onPaused?.(ms);
        await sleep(ms, signal);
        continue;
      }
      await sleep(ms > 0 ? ms : poll, signal);
      poll = Math.min(ADMISSION_POLL_MAX_MS, poll * 2);
    }
    if (!limits?.concurrency) return () => {};
    let released = false;
    return () => {
      if (released) return;
      released = true;
      void this.#redis.zrem(keys.slots, grant).catch(() => {
        // The lease expires on its own.
      });
    };
  }

  /**
   * Pauses `providerKey` for every worker for `retryAfterMs` from now, unless a longer pause is
   * already in place, and announces it. Resolves true when this call set or extended the pause.
   */
  async pause(providerKey: string, retryAfterMs: number): Promise<boolean> {
    const ms = Math.max(1, Math.ceil(retryAfterMs));
    this.notePause(providerKey, ms);
    const reply = await PAUSE.run(this.#redis, [this.#keys.limit(providerKey).pause], [ms]);
    if (Number(reply) !== 1) return false;
    await this.#redis.publish(
      this.#keys.pauseChannel,
      JSON.stringify({ providerKey, ms } satisfies PauseAnnouncement),
    );
    return true;
  }

  /** Records a pause this process heard of (an announcement on the pause channel). */
  notePause(providerKey: string, ms: number): void {
    const until = Date.now() + ms;
    if (until > (this.#pausedUntil.get(providerKey) ?? 0)) this.#pausedUntil.set(providerKey, until);
  }

  /** Handles a message of the pause channel. */
  onAnnouncement(message: string): void {
    try {
      const { providerKey, ms } = JSON.parse(message) as Partial<Record<keyof PauseAnnouncement, unknown>>;
      if (typeof providerKey === 'string' && typeof ms === 'number') this.notePause(providerKey, ms);
    } catch {
      // Not an announcement of ours.
    }
  }

  /** Reads a key's pause once per process, for pauses announced before this process listened. */
  #seed(providerKey: string): Promise<void> {
    let seeded = this.#seeded.get(providerKey);
    if (!seeded) {
      seeded = this.#redis.pttl(this.#keys.limit(providerKey).pause).then(
        (ms) => {
          if (ms > 0) this.notePause(providerKey, ms);
        },
        () => {
          this.#seeded.delete(providerKey);
        },
      );
      this.#seeded.set(providerKey, seeded);
    }
    return seeded;
  }
}
