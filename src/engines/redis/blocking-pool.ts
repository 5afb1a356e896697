/**
 * Dedicated connections for blocking reads (XREAD BLOCK on an inbox, BLPOP of a host-tool reply):
 * a blocking command holds its connection, so each concurrent wait needs its own. Idle ones are
 * kept for reuse; an aborted wait closes its connection, which is the only way to end a blocking
 * command early.
 */
import type { Redis } from 'ioredis';
import { BLOCKING_POOL_IDLE } from './constants.ts';

export class BlockingPool {
  readonly #base: Redis;
  readonly #idle: Redis[] = [];
  readonly #busy = new Set<Redis>();
  #closed = false;

  constructor(base: Redis) {
    this.#base = base;
  }

  /**
   * Runs `command` on a connection of its own. When `signal` aborts, the connection is closed and
   * the result is `onAbort`'s value.
   */
  async run<T>(command: (redis: Redis) => Promise<T>, signal: AbortSignal, onAbort: T): Promise<T> {
    if (signal.aborted || this.#closed) return onAbort;
    const redis = this.#idle.pop() ?? this.#open();
    this.#busy.add(redis);
    let aborted = false;
    const abort = (): void => {
      aborted = true;
      redis.disconnect();
    };
    signal.addEventListener('abort', abort, { once: true });
    try {
      return await command(redis);
    } catch (error) {
      if (aborted || this.#closed) return onAbort;
      throw error;
    } finally {
      signal.removeEventListener('abort', abort);
      this.#busy.delete(redis);
      if (aborted || this.#closed || this.#idle.length >= BLOCKING_POOL_IDLE) redis.disconnect();
      else this.#idle.push(redis);
    }
  }

  #open(): Redis {
    const redis = this.#base.duplicate({ enableAutoPipelining: false });
    // The client reconnects by itself; without a listener each error would be printed.
    redis.on('error', () => {});
    return redis;
  }

  /** Closes every connection, ending the waits in progress with their `onAbort` value. */
  close(): void {
    this.#closed = true;
    for (const redis of [...this.#idle, ...this.#busy]) redis.disconnect();
    this.#idle.length = 0;
  }
}
