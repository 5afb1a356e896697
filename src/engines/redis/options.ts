/** Options of the redis engine: where Redis is and how its queue behaves, validated once. */
import { UserError } from '../../errors.ts';
import { nonNegative, positiveInt, timeLimit } from '../../option-checks.ts';
import { resolveRedisUrl } from './connection.ts';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_KEY_PREFIX,
  DEFAULT_MAX_BATCH_SIZE,
  DEFAULT_PARK_AFTER_MS,
  DEFAULT_QUEUE_NAME,
  DEFAULT_RECONCILE_INTERVAL_MS,
  DEFAULT_REDIS_DOWN_TIMEOUT_MS,
  DEFAULT_UNSERVED_AFTER_MS,
} from './constants.ts';
import { checkName } from './keys.ts';

/** Where the redis backend finds Redis and its queue (see docs/scaleout.md). */
export interface RedisBackendOptions {
  /** `redis://` or `rediss://` URL. @default `TROUPE_REDIS_URL` */
  readonly redisUrl?: string;
  /** BullMQ queue of agent jobs; workers must use the same. @default 'troupe-agents' */
  readonly queueName?: string;
  /** Key prefix; workers must use the same. @default 'troupe' */
  readonly prefix?: string;
  /** A `wait_for_instruction` longer than this parks its job (lock and worker slot released). @default 5000 */
  readonly parkAfterMs?: number;
  /**
   * How long after a worker last said something about a running agent its job state is read, in
   * case the end signal was lost; then after twice as long each time, up to 10 intervals apart.
   * @default 1000
   */
  readonly reconcileIntervalMs?: number;
  /**
   * Keep jobs, journals and inboxes this many seconds after an agent ends, then let them expire.
   * A job holds the agent's task and its outcome (the result, unmasked): docs/scaleout.md.
   * 0: deleted as the agent ends; a job of an agent's own once the supervisor has read its outcome
   * (one it never reads expires after 24 h).
   * @default kept until deleted
   */
  readonly retainSeconds?: number;
  /** How long the first spawn waits for Redis before failing with `redis_unreachable`. @default 10000 */
  readonly connectTimeoutMs?: number;
  /**
   * How long the supervisor waits for a lost Redis connection to come back, or for a stalled server
   * to answer (one PING at a time, every `reconcileIntervalMs`): then every agent it
   * runs, and every one it runs while Redis stays unreachable, fails with `redis_unreachable`.
   * 0: wait for ever. @default 60000
   */
  readonly redisDownTimeoutMs?: number;
  /**
   * Jobs no worker has taken for this long, while none of the supervisor's agents started either,
   * raise `jobs:unserved` (with how many workers are connected). @default 5000
   */
  readonly unservedAfterMs?: number;
  /**
   * The agents run in one event-loop turn go to the workers as one BullMQ job per this many (a
   * worker runs all the agents of a job at once). 1: a job per agent, as before batches. Workers
   * older than batches cannot run batch jobs: upgrade the workers first (docs/scaleout.md).
   * @default 32
   */
  readonly maxBatchSize?: number;
}

/** Redis options with every default filled in. */
export interface PreparedRedisOptions {
  readonly redisUrl: string;
  readonly queueName: string;
  readonly prefix: string;
  readonly parkAfterMs: number;
  readonly reconcileIntervalMs: number;
  readonly retainSeconds: number | undefined;
  readonly connectTimeoutMs: number;
  readonly redisDownTimeoutMs: number;
  readonly unservedAfterMs: number;
  readonly maxBatchSize: number;
}

/** Validates redis options once and fills defaults. Throws UserError `invalid_option` / `missing_redis_url`. */
export function prepareRedisOptions(options: RedisBackendOptions): PreparedRedisOptions {
  const reconcileIntervalMs = timeLimit(
    'reconcileIntervalMs',
    options.reconcileIntervalMs,
    DEFAULT_RECONCILE_INTERVAL_MS,
  );
  if (reconcileIntervalMs < 1) {
    throw new UserError('invalid_option', 'Expected `reconcileIntervalMs` to be at least 1', {
      option: 'reconcileIntervalMs',
    });
  }
  const retainSeconds =
    options.retainSeconds === undefined ? undefined : nonNegative('retainSeconds', options.retainSeconds, 0);
  return {
    redisUrl: resolveRedisUrl(options.redisUrl),
    queueName: checkName('queueName', options.queueName ?? DEFAULT_QUEUE_NAME),
    prefix: checkName('prefix', options.prefix ?? DEFAULT_KEY_PREFIX),
    parkAfterMs: timeLimit('parkAfterMs', options.parkAfterMs, DEFAULT_PARK_AFTER_MS),
    reconcileIntervalMs,
    retainSeconds,
    connectTimeoutMs: timeLimit('connectTimeoutMs', options.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS),
    redisDownTimeoutMs: timeLimit(
      'redisDownTimeoutMs',
      options.redisDownTimeoutMs,
      DEFAULT_REDIS_DOWN_TIMEOUT_MS,
    ),
    unservedAfterMs: timeLimit('unservedAfterMs', options.unservedAfterMs, DEFAULT_UNSERVED_AFTER_MS),
    maxBatchSize: positiveInt('maxBatchSize', options.maxBatchSize, DEFAULT_MAX_BATCH_SIZE),
  };
}
