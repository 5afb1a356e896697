/** Lua scripts run with EVALSHA, falling back to EVAL when the server lost its script cache (a restart). */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script with a fixed number of keys, or (`'any'`) as many as each call passes. */
export class LuaScript {
  readonly #source: string;
  readonly #sha: string;
  readonly #keys: number | 'any';

  constructor(source: string, keys: number | 'any') {
    this.#source = source;
    this.#sha = createHash('sha1').update(source, 'utf8').digest('hex');
    this.#keys = keys;
  }

  /** Runs the script; rejects with Redis's error (e.g. an `error_reply` from the script). */
  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const count = this.#keys === 'any' ? keys.length : this.#keys;
    try {
      return await redis.evalsha(this.#sha, count, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await redis.eval(this.#source, count, ...keys, ...args);
    }
  }
}
