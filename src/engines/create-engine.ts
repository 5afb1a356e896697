/** Builds the engine a supervisor's options name: the one place that knows both implementations. */
import type { Backend, Engine, EngineContext, EngineOptions } from './engine.ts';
import type { PreparedRedisOptions } from './redis/options.ts';
import { RedisEngine } from './redis/redis-engine.ts';
import type { PreparedThreadOptions } from './threads/options.ts';
import { ThreadEngine } from './threads/thread-engine.ts';

/** Options of both engines; `redis` is set when `backend` is 'redis'. */
export type AnyEngineOptions = EngineOptions &
  PreparedThreadOptions & { readonly backend: Backend; readonly redis: PreparedRedisOptions | undefined };

/** The engine for `options.backend`. */
export function createEngine(options: AnyEngineOptions, context: EngineContext): Engine {
  const { redis } = options;
  if (options.backend === 'redis' && redis !== undefined)
    return new RedisEngine({ ...options, redis }, context);
  return new ThreadEngine(options, context);
}
