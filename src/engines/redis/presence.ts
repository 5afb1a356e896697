/**
 * Which workers are connected to a queue: each worker adds its number to a sorted set every
 * WORKER_HEARTBEAT_MS, scored by the server's clock, and removes it when it closes; a worker that
 * died drops out after WORKER_ALIVE_MS. Supervisors count it to say where their agents can run.
 */
import type { Redis } from 'ioredis';
import { WORKER_ALIVE_MS, WORKER_HEARTBEAT_MS } from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';
import { LuaScript } from './script.ts';

const BEAT = new LuaScript(
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`,
  1,
);

const COUNT = new LuaScript(
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], now - tonumber(ARGV[1]), '+inf')
`,
  1,
);

/** Keeps worker `workerId` counted as connected until `stop()`. */
export function announceWorker(
  redis: Redis,
  keys: ScaleoutKeys,
  workerId: number,
): { stop(): Promise<void> } {
  const beat = (): void => {
    BEAT.run(redis, [keys.workersAlive], [String(workerId), WORKER_ALIVE_MS]).catch(() => {
      // Redis is unreachable: the worker drops out of the count until the next beat lands.
    });
  };
  beat();
  const timer = setInterval(beat, WORKER_HEARTBEAT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await redis.zrem(keys.workersAlive, String(workerId)).catch(() => 0);
    },
  };
}

/** Workers of the queue heard from within WORKER_ALIVE_MS. */
export async function connectedWorkers(redis: Redis, keys: ScaleoutKeys): Promise<number> {
  return Number(await COUNT.run(redis, [keys.workersAlive], [WORKER_ALIVE_MS]));
}
