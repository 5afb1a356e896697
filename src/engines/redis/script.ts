/** Lua scripts run with EVALSHA, falling back to EVAL when the server lost its script cache (a restart). */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script with a fixed number of keys. */
export class LuaScript {
  readonly #source: string;
  readonly #sha: string;
  readonly #keys: number;

  constructor(source: string, keys: number) {
    this.#source = source;
    this.#sha = createHash('sha1').update(source, 'utf8').digest('hex');
    this.#keys = keys;
  }

  /** Runs the script; rejects with Redis's error (e.g. an `error_reply` from the script). */
  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, this.#keys, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await redis.eval(this.#source, this.#keys, ...keys, ...args);
    }
  }
}
