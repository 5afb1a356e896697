/** Redis connections: URL resolution and the client settings every troupe connection uses. */
import type { Redis } from 'ioredis';
import { describeValue, SystemError, UserError } from '../../errors.ts';
import { EVENTS_STREAM_MAX_LENGTH, REDIS_URL_ENV } from './constants.ts';
import { ioredis } from './packages.ts';

/**
 * The Redis URL to use: `option`, else `TROUPE_REDIS_URL`. Throws UserError `missing_redis_url`
 * when neither is set and `invalid_option` when it is not a `redis://` or `rediss://` URL.
 */
export function resolveRedisUrl(
  option: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string {
  const value = option ?? env[REDIS_URL_ENV]?.trim();
  if (value === undefined || value === '') {
    throw new UserError(
      'missing_redis_url',
      `The redis backend needs a Redis URL: pass \`redisUrl\` (--redis) or set ${REDIS_URL_ENV}`,
      { option: 'redisUrl' },
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidUrl(value);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw invalidUrl(value);
  return value;
}

function invalidUrl(value: string): UserError {
  return new UserError(
    'invalid_option',
    `Expected \`redisUrl\` to be a redis:// or rediss:// URL, got ${describeValue(value)}`,
    { option: 'redisUrl' },
  );
}

/**
 * A client for troupe's own commands. Commands wait through a Redis restart instead of failing
 * (`maxRetriesPerRequest: null`, offline queue on): an agent's journal append or inbox read
 * resumes once the server is back. Auto-pipelining batches the many small appends of many agents.
 */
export function connectRedis(url: string, name: string): Redis {
  return new (ioredis().Redis)(url, {
    maxRetriesPerRequest: null,
    enableAutoPipelining: true,
    connectionName: name,
  });
}

/** Connection options BullMQ's own clients get (its blocking clients need `maxRetriesPerRequest: null`). */
export function bullConnection(url: string): { readonly url: string; readonly maxRetriesPerRequest: null } {
  return { url, maxRetriesPerRequest: null };
}

/**
 * Options of every BullMQ Queue troupe opens on `prefix`. Each Queue writes its events stream
 * length into the queue's meta hash when it starts, so all of them must say the same (see
 * EVENTS_STREAM_MAX_LENGTH).
 */
export function bullQueueOptions(url: string, prefix: string) {
  return {
    connection: bullConnection(url),
    prefix,
    streams: { events: { maxLen: EVENTS_STREAM_MAX_LENGTH } },
  };
}

/** Closes a client politely, or at once when the server is unreachable. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/** The URL without its password, for messages. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(invalid URL)';
  }
}

/**
 * Resolves once `redis` is connected. Rejects with SystemError `redis_unreachable` when it is not
 * within `timeoutMs`: commands would otherwise wait for the server forever.
 */
export function waitForRedis(redis: Redis, url: string, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError: string | undefined;
    const onError = (error: Error): void => {
      lastError = error.message;
    };
    const onReady = (): void => {
      cleanup();
      resolve();
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new SystemError(
          'redis_unreachable',
          `Could not connect to Redis at ${displayUrl(url)} within ${timeoutMs} ms${lastError ? `: ${lastError}` : ''}`,
          { url: displayUrl(url), timeoutMs },
        ),
      );
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
    };
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

/**
 * Connects to `url` once, without retrying, and disconnects: a check that Redis is there before a
 * command creates anything. Rejects with SystemError `redis_unreachable` at the first connection
 * error (refused, unknown host, bad password) or after `timeoutMs`.
 */
export async function checkRedis(url: string, timeoutMs: number): Promise<void> {
  const redis = new (ioredis().Redis)(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectionName: 'troupe-check',
  });
  // The error event names the cause (ECONNREFUSED, ENOTFOUND, WRONGPASS); connect() only says the
  // connection closed.
  let cause: string | undefined;
  redis.on('error', (error: Error) => {
    cause ??= error.message;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (error) {
    redis.disconnect();
    const reason = (cause ?? (error instanceof Error ? error.message : String(error))).replace(/\.$/, '');
    throw new SystemError(
      'redis_unreachable',
      `Could not connect to Redis at ${displayUrl(url)}: ${reason}. Is redis-server running there, and is the URL right?`,
      { url: displayUrl(url), timeoutMs },
    );
  } finally {
    clearTimeout(timer);
  }
  try {
    // A database the server does not have fails its SELECT, which ioredis only logs: every
    // connection would use database 0, another run's.
    const { db } = redis.options;
    if (db !== undefined && db !== 0) {
      await redis.select(db).catch((error: unknown) => {
        throw new UserError(
          'invalid_option',
          `Redis at ${displayUrl(url)} has no database ${db}: ${error instanceof Error ? error.message : String(error)}`,
          { url: displayUrl(url), db },
        );
      });
    }
  } finally {
    redis.disconnect();
  }
}
