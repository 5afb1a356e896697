import { checkRedis, resolveRedisUrl } from '../../engines/redis/connection.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_REDIS_DOWN_TIMEOUT_MS } from '../../engines/redis/constants.ts';
import { UserError } from '../../errors.ts';
import type { SupervisorOptions } from '../../supervisor/options.ts';
import { integerFlag } from './integer-flag.ts';

/** Redis flags of the fan-out commands (`troupe fanout`, `troupe resume RUN_DIR`). */
export interface RedisFlags {
  /** `--redis <url>`. @default TROUPE_REDIS_URL */
  readonly redis?: string;
  /** `--redis-down-timeout-ms <ms>`: the Supervisor's `redisDownTimeoutMs`. @default 60000 */
  readonly redisDownTimeoutMs?: number;
  /** `--queue <name>`: the queue the run's `troupe worker`s take jobs from. @default troupe-agents */
  readonly queue?: string;
  /** `--prefix <prefix>`: the Redis key prefix of those workers. @default troupe */
  readonly prefix?: string;
  /** `--retain-seconds <s>`: the Supervisor's `retainSeconds`. @default kept until deleted */
  readonly retainSeconds?: number;
}

/** Help of `--redis-down-timeout-ms`, the same on every command that takes it. */
export const REDIS_DOWN_TIMEOUT_HELP = `with the redis engine: how long a lost (or stalled) Redis may stay away before the running agents fail with redis_unreachable and the command exits 1 (default ${DEFAULT_REDIS_DOWN_TIMEOUT_MS}; 0 = wait for ever)`;

/** Parses `--redis-down-timeout-ms`: milliseconds, a non-negative integer. */
export function redisDownTimeoutMs(value: string): number {
  return integerFlag(value, { expected: 'a non-negative integer of milliseconds (0 = wait for ever)' });
}

/** Help of `--retain-seconds`, the same on every command that takes it. */
export const RETAIN_SECONDS_HELP =
  "with the redis engine: keep an ended agent's job (its unmasked result), journal, inbox and batch hash this many seconds, then let them expire (default: kept until deleted; 0 = gone once the outcome is read)";

/** Parses `--retain-seconds`: seconds, a non-negative integer. */
export function retainSeconds(value: string): number {
  return integerFlag(value, {
    expected: 'a non-negative integer of seconds (0 = gone once the outcome is read)',
  });
}

/**
 * Throws UserError `invalid_option` when a Redis flag is given to a run on the threads engine
 * (`where`: what makes it one): it would be ignored, and the person meant the redis engine.
 */
export function checkRedisFlagsUsed(flags: RedisFlags, redis: boolean, where: string): void {
  if (redis) return;
  const given = [
    ...(flags.redis === undefined ? [] : ['--redis']),
    ...(flags.redisDownTimeoutMs === undefined ? [] : ['--redis-down-timeout-ms']),
    ...(flags.queue === undefined ? [] : ['--queue']),
    ...(flags.prefix === undefined ? [] : ['--prefix']),
    ...(flags.retainSeconds === undefined ? [] : ['--retain-seconds']),
  ];
  const [first] = given;
  if (first === undefined) return;
  throw new UserError(
    'invalid_option',
    `${given.join(', ')} only ${given.length === 1 ? 'applies' : 'apply'} to the redis engine; ${where}`,
    {
      option: first,
    },
  );
}

/**
 * Supervisor options for the redis engine at `url` (default: TROUPE_REDIS_URL), once Redis has
 * answered. Throws UserError `missing_redis_url` / `invalid_option`, or SystemError
 * `redis_unreachable` at the first connection error: a mistyped URL fails in milliseconds, before
 * a run directory exists.
 */
export async function redisEngine(flags: RedisFlags): Promise<Partial<SupervisorOptions>> {
  const redisUrl = resolveRedisUrl(flags.redis);
  await checkRedis(redisUrl, DEFAULT_CONNECT_TIMEOUT_MS);
  return {
    backend: 'redis',
    redisUrl,
    ...(flags.redisDownTimeoutMs === undefined ? {} : { redisDownTimeoutMs: flags.redisDownTimeoutMs }),
    ...(flags.queue === undefined ? {} : { queueName: flags.queue }),
    ...(flags.prefix === undefined ? {} : { prefix: flags.prefix }),
    ...(flags.retainSeconds === undefined ? {} : { retainSeconds: flags.retainSeconds }),
  };
}
