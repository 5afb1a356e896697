/** Options of the redis backend's supervisor: the thread backend's options plus where Redis is. */
import { tmpdir } from 'node:os';
import { describeValue, UserError } from '../errors.ts';
import {
  type PreparedSupervisorOptions,
  prepareSupervisorOptions,
  type SupervisorOptions,
} from '../supervisor/options.ts';
import { resolveRedisUrl } from './connection.ts';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_KEY_PREFIX,
  DEFAULT_PARK_AFTER_MS,
  DEFAULT_QUEUE_NAME,
  DEFAULT_RECONCILE_INTERVAL_MS,
} from './constants.ts';
import { checkName } from './keys.ts';

/**
 * Options of {@link RedisSupervisor}. The thread backend's options keep their meaning, except the
 * ones about threads (`threads`, `isolation`, `maxAgentsPerThread`, `resourceLimits`, `heartbeat`,
 * `execArgv`: workers decide how they run), `journalDir` and `fsync` (journals are Redis Streams;
 * their durability is the server's `appendonly` / `appendfsync` setting) and `restart.maxDelayMs`.
 */
export type RedisSupervisorOptions = SupervisorOptions;

/** Every option filled in. */
export interface PreparedRedisSupervisorOptions extends PreparedSupervisorOptions {
  readonly redisUrl: string;
  readonly queueName: string;
  readonly prefix: string;
  readonly parkAfterMs: number;
  readonly reconcileIntervalMs: number;
  readonly retainSeconds: number | undefined;
  readonly connectTimeoutMs: number;
}

function nonNegative(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new UserError(
      'invalid_option',
      `Expected \`${option}\` to be a non-negative number, got ${describeValue(value)}`,
      { option },
    );
  }
  return value;
}

/** Validates options once and fills defaults. Throws UserError `invalid_option` / `missing_redis_url`. */
export function prepareRedisSupervisorOptions(
  options: RedisSupervisorOptions = {},
): PreparedRedisSupervisorOptions {
  // Journals live in Redis: a journalDir is never written, so none is created.
  const base = prepareSupervisorOptions({ ...options, journalDir: options.journalDir ?? tmpdir() });
  const reconcileIntervalMs = nonNegative(
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
    ...base,
    ownsJournalDir: false,
    redisUrl: resolveRedisUrl(options.redisUrl),
    queueName: checkName('queueName', options.queueName ?? DEFAULT_QUEUE_NAME),
    prefix: checkName('prefix', options.prefix ?? DEFAULT_KEY_PREFIX),
    parkAfterMs: nonNegative('parkAfterMs', options.parkAfterMs, DEFAULT_PARK_AFTER_MS),
    reconcileIntervalMs,
    retainSeconds,
    connectTimeoutMs: nonNegative('connectTimeoutMs', options.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS),
  };
}
