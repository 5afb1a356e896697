/**
 * A Lua script's effect is on the connection before the commands issued after it, also on a
 * server that never saw the script: EVALSHA answered NOSCRIPT there and the EVAL sent a round trip
 * later ran behind them (a run budget's count after the next request's read of it: three agents
 * made six requests against a budget one request spends, in a loaded CI run).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRunBudget } from '../../../src/engines/redis/run-budget.ts';
import { LuaScript } from '../../../src/engines/redis/script.ts';
import { redisServerPath, skipReason, TestRedis, uniqueName } from './helpers.ts';

describe(`a Lua script on a connection${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
  });

  afterAll(async () => {
    await redis?.quit();
    await server?.destroy();
  });

  it('runs before a read issued after it, the first time and after a reconnect to a server that lost it', async () => {
    const key = uniqueName('order');
    const script = new LuaScript(`return redis.call('INCR', KEYS[1])`, 1);
    for (let round = 1; round <= 3; round += 1) {
      // Round 2: as after a restart, the cache is gone and the connection new; round 3: cached.
      if (round === 2) {
        await redis.script('FLUSH');
        const ready = new Promise((resolve) => redis.once('ready', resolve));
        redis.disconnect(true);
        await ready;
      }
      const ran = script.run(redis, [key], []);
      const read = redis.get(key);
      expect(await read).toBe(String(round));
      expect(await ran).toBe(round);
    }
  });

  it("a run budget's count is seen by the next spent() on the connection, on a fresh server", async () => {
    await redis.script('FLUSH');
    const budget = new RedisRunBudget(
      redis,
      uniqueName('budget'),
      { maxTotalTokens: 100, maxCostUsd: 0 },
      'agent',
    );
    const counted = budget.count(150, null);
    expect(await budget.spent()).toMatch(/used 150 tokens/);
    await counted;
  });
});
