/** The engine a fan-out command runs on, checked before the command creates anything. */
import { checkRedis, resolveRedisUrl } from '../../engines/redis/connection.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../../engines/redis/constants.ts';
import type { SupervisorOptions } from '../../supervisor/options.ts';

/**
 * Supervisor options for the redis engine at `url` (default: TROUPE_REDIS_URL), once Redis has
 * answered. Throws UserError `missing_redis_url` / `invalid_option`, or SystemError
 * `redis_unreachable` at the first connection error: a mistyped URL fails in milliseconds, before
 * a run directory exists.
 */
export async function redisEngine(url: string | undefined): Promise<Partial<SupervisorOptions>> {
  const redisUrl = resolveRedisUrl(url);
  await checkRedis(redisUrl, DEFAULT_CONNECT_TIMEOUT_MS);
  return { backend: 'redis', redisUrl };
}
