/** Lua scripts: EVAL on a connection's first call, EVALSHA after (EVAL again after a server restart lost them). */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script with a fixed number of keys, or (`'any'`) as many as each call passes.
 *
 * The first call on a connection sends the script (EVAL, which also caches it on the server);
 * later calls send its hash (EVALSHA). Starting with EVALSHA on a server that never saw the script
 * answered NOSCRIPT and sent EVAL a round trip later, behind commands issued after the call on the
 * same connection: a run budget's count landed after the next request's read of it (three agents
 * made six requests against a budget one request spends), a journal append after the signal that
 * reports it. A reconnect (a restarted server has lost its cache) starts over with EVAL; a
 * NOSCRIPT on a live connection (SCRIPT FLUSH) is answered with EVAL, and so is its next call.
 */
export class LuaScript {
  readonly #source: string;
  readonly #sha: string;
  readonly #keys: number | 'any';
  /** Connections (their sockets: a reconnect opens a new one) whose server has this script cached. */
  readonly #loaded = new WeakSet<object>();

  constructor(source: string, keys: number | 'any') {
    this.#source = source;
    this.#sha = createHash('sha1').update(source, 'utf8').digest('hex');
    this.#keys = keys;
  }

  /** Runs the script; rejects with Redis's error (e.g. an `error_reply` from the script). */
  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const count = this.#keys === 'any' ? keys.length : this.#keys;
    // Not connected (starting, reconnecting after a restart): the offline queue goes to a server
    // that may not have it, so the source goes too.
    const socket = redis.status === 'ready' ? redis.stream : undefined;
    if (socket === undefined || !this.#loaded.has(socket)) {
      // Marked at once: calls made before this one answers are behind it on the connection.
      if (socket !== undefined) this.#loaded.add(socket);
      return await redis.eval(this.#source, count, ...keys, ...args);
    }
    try {
      return await redis.evalsha(this.#sha, count, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      // Its cache flushed under a live connection (SCRIPT FLUSH): this call ran late, the next do not.
      this.#loaded.delete(socket);
      return await redis.eval(this.#source, count, ...keys, ...args);
    }
  }
}
