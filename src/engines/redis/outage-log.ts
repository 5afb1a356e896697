/**
 * What `troupe worker` says while Redis is unreachable: one line when it is lost and one when it is
 * back, not a line per reconnect attempt of every connection (ioredis retries every 2 s at most,
 * per connection and per worker thread: an outage of an hour was thousands of lines).
 *
 * A worker does not give up on a lost Redis: its commands wait for the server (BullMQ's guidance
 * for workers, `maxRetriesPerRequest: null`), since a worker restarted by a process manager would
 * only wait the same way, and its agents' jobs are taken over by other workers once their locks
 * expire (docs/scaleout.md, "Redis restarts").
 */
import { checkRedis, connectRedis, displayUrl } from './connection.ts';

/** How often a lost Redis is tried, by one connection attempt, to say when it is back. */
export const OUTAGE_PROBE_INTERVAL_MS = 1_000;

/** Errors of a connection that cannot reach the server (as opposed to a command's own error). */
const CONNECTION_ERROR =
  /\b(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)\b|Connection is closed|connect ETIMEDOUT/;

/** True when `error` says a connection could not reach Redis (its code or its message). */
export function isConnectionError(error: { readonly message: string; readonly code?: unknown }): boolean {
  return (
    (typeof error.code === 'string' && CONNECTION_ERROR.test(error.code)) ||
    CONNECTION_ERROR.test(error.message)
  );
}

/** Options of {@link RedisOutageLog}. */
export interface RedisOutageLogOptions {
  /** One connection attempt; resolves once Redis answers. @default checkRedis */
  readonly check?: (url: string, timeoutMs: number) => Promise<void>;
  /** @default OUTAGE_PROBE_INTERVAL_MS */
  readonly probeIntervalMs?: number;
}

/** Turns the connection errors of a worker into one line per outage and one when it ends. */
export class RedisOutageLog {
  readonly #url: string;
  readonly #say: (line: string) => void;
  readonly #check: (url: string, timeoutMs: number) => Promise<void>;
  readonly #probeIntervalMs: number;
  #lostAt: number | undefined;
  /** Whether the current outage was said (one right after the last was over is not: see error()). */
  #said = false;
  #backAt = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(url: string, say: (line: string) => void, options: RedisOutageLogOptions = {}) {
    this.#url = url;
    this.#say = say;
    this.#check = options.check ?? checkRedis;
    this.#probeIntervalMs = options.probeIntervalMs ?? OUTAGE_PROBE_INTERVAL_MS;
  }

  /** True while Redis is known to be unreachable. */
  get lost(): boolean {
    return this.#lostAt !== undefined;
  }

  /**
   * Takes an error of the worker: a connection error is said once per outage (and the outage is
   * watched until Redis answers again) and returns true; any other returns false, for the caller
   * to report.
   */
  error(error: { readonly message: string; readonly code?: unknown }): boolean {
    if (!isConnectionError(error)) return false;
    if (this.#lostAt !== undefined || this.#closed) return true;
    this.#lostAt = Date.now();
    // Connections still in their reconnect backoff fail once more after the probe got through:
    // such an outage is only said if it lasts past the next probe.
    this.#said = this.#lostAt - this.#backAt > 3 * this.#probeIntervalMs;
    if (this.#said) this.#sayLost(error.message);
    this.#pendingMessage = error.message;
    this.#probe();
    return true;
  }

  /** Stops watching an outage. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #pendingMessage = '';

  #sayLost(message: string): void {
    this.#said = true;
    this.#say(
      `lost Redis at ${displayUrl(this.#url)} (${message}); waiting for it to come back (running agents wait too; jobs whose locks expire meanwhile are resumed by other workers)`,
    );
  }

  #probe(): void {
    this.#timer = setTimeout(() => {
      this.#check(this.#url, this.#probeIntervalMs).then(
        () => {
          if (this.#closed || this.#lostAt === undefined) return;
          const seconds = Math.round((Date.now() - this.#lostAt) / 1000);
          this.#lostAt = undefined;
          this.#backAt = Date.now();
          if (this.#said)
            this.#say(`Redis at ${displayUrl(this.#url)} is back (unreachable for about ${seconds} s)`);
        },
        () => {
          if (this.#closed) return;
          if (!this.#said) this.#sayLost(this.#pendingMessage);
          this.#probe();
        },
      );
    }, this.#probeIntervalMs);
    this.#timer.unref();
  }
}

/** How long a PING may go unanswered before `troupe worker` says Redis stopped answering. */
export const STALL_REPORT_MS = 10_000;

/** How often the stall watch looks at its PING (one at a time). */
export const STALL_PROBE_INTERVAL_MS = 1_000;

/** Options of {@link RedisStallWatch}. */
export interface RedisStallWatchOptions {
  /** @default STALL_REPORT_MS */
  readonly reportMs?: number;
  /** @default STALL_PROBE_INTERVAL_MS */
  readonly probeIntervalMs?: number;
  /** True while a lost connection is being said (by {@link RedisOutageLog}): silence then is not a stall. */
  readonly lost?: () => boolean;
}

/**
 * What `troupe worker` says when Redis stops answering without closing its connections (SIGSTOP,
 * `CLIENT PAUSE`, a hung host): no connection error comes, every command waits, and the worker
 * was silent. One PING at a time; one unanswered for `reportMs` is said once, and its answer ends
 * the stall with one more line. The worker keeps waiting, as for a lost Redis.
 */
export class RedisStallWatch {
  readonly #ping: () => Promise<unknown>;
  readonly #url: string;
  readonly #say: (line: string) => void;
  readonly #reportMs: number;
  readonly #lost: () => boolean;
  readonly #timer: NodeJS.Timeout;
  #sentAt: number | undefined;
  #said = false;
  #closed = false;

  constructor(
    ping: () => Promise<unknown>,
    url: string,
    say: (line: string) => void,
    options: RedisStallWatchOptions = {},
  ) {
    this.#ping = ping;
    this.#url = url;
    this.#say = say;
    this.#reportMs = options.reportMs ?? STALL_REPORT_MS;
    this.#lost = options.lost ?? (() => false);
    this.#timer = setInterval(() => this.#look(), options.probeIntervalMs ?? STALL_PROBE_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Stops watching. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
  }

  #look(): void {
    if (this.#closed) return;
    const sentAt = this.#sentAt;
    if (sentAt === undefined) {
      const sent = Date.now();
      this.#sentAt = sent;
      const answered = (): void => this.#answered(sent);
      this.#ping().then(answered, answered);
      return;
    }
    if (this.#said || this.#lost() || Date.now() - sentAt < this.#reportMs) return;
    this.#said = true;
    this.#say(
      `Redis at ${displayUrl(this.#url)} has not answered a PING for ${Math.round((Date.now() - sentAt) / 1000)} s (is the server paused, stopped or overloaded?); running agents wait for it`,
    );
  }

  /** The PING sent at `sentAt` came back (or failed: a lost connection is the outage log's to say). */
  #answered(sentAt: number): void {
    if (this.#sentAt !== sentAt) return;
    this.#sentAt = undefined;
    if (!this.#said || this.#closed) return;
    this.#said = false;
    this.#say(
      `Redis at ${displayUrl(this.#url)} answers again (silent for about ${Math.round((Date.now() - sentAt) / 1000)} s)`,
    );
  }
}

/**
 * A {@link RedisStallWatch} on a connection of its own (`troupe-stall-watch`); `close()` closes
 * both. The connection's errors are left to the worker's outage log (its own connections see them).
 */
export function watchRedisStalls(
  url: string,
  say: (line: string) => void,
  options: RedisStallWatchOptions = {},
): { close(): void } {
  const redis = connectRedis(url, 'troupe-stall-watch');
  redis.on('error', () => {});
  const watch = new RedisStallWatch(() => redis.ping(), url, say, options);
  return {
    close: () => {
      watch.close();
      // Not QUIT: a stalled server would never answer it.
      redis.disconnect();
    },
  };
}
