/**
 * A worker's wait for a host call's reply: it was a BLPOP with no limit, so a worker whose
 * supervisor died held the call (and its agent) until the agent was cancelled. The wait now checks
 * the supervisor's heartbeat between bounded BLPOPs and fails the call `supervisor_lost` once the
 * heartbeat it saw is gone; a live supervisor's late answer still arrives.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../../src/abort.ts';
import { BlockingPool } from '../../../src/engines/redis/blocking-pool.ts';
import { answerHostCall, callHostTool } from '../../../src/engines/redis/host-calls.ts';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { readSupervisorStreams } from '../../../src/engines/redis/supervisor-streams.ts';
import type { SupervisorRequest } from '../../../src/protocol/redis.ts';
import { redisServerPath, skipReason, TestRedis, uniqueName } from './helpers.ts';

describe(`a host call's wait for its reply${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;
  let pool: BlockingPool;

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: null });
    pool = new BlockingPool(redis);
  });

  afterAll(async () => {
    pool?.close();
    await redis?.quit();
    await server?.destroy();
  });

  it("takes a live supervisor's answer after several rounds, and fails supervisor_lost once it is gone", async () => {
    const keys = new ScaleoutKeys('test', uniqueName('host-wait'));
    const supervisorId = 'sup-1';
    const reader = redis.duplicate({ enableAutoPipelining: false });
    reader.on('error', () => {});
    const calls: SupervisorRequest[] = [];
    let stopped = false;
    const reading = readSupervisorStreams({
      reader,
      signals: keys.signals(supervisorId),
      requests: keys.requests(supervisorId),
      stopped: () => stopped,
      onSignal: () => {},
      onCall: (call) => calls.push(call),
      onRefused: () => {},
    });
    const alive = keys.supervisorAlive(supervisorId);
    await vi.waitFor(async () => expect(await redis.exists(alive)).toBe(1), { interval: 20 });
    const signal = new AbortController().signal;
    const call = (name: string) =>
      callHostTool(redis, pool, keys, supervisorId, { agentId: 'a1', name, args: {} }, signal, {
        pollMs: 50,
      });

    // Alive: a reply after a few empty rounds is the call's outcome.
    const answered = call('slow_tool');
    await vi.waitFor(() => expect(calls).toHaveLength(1), { interval: 20 });
    await sleep(200);
    await answerHostCall(redis, keys, calls[0]?.requestId ?? '', { ok: true, text: 'done late' });
    expect(await answered).toEqual({ ok: true, text: 'done late' });

    // The supervisor dies with the call in hand: its heartbeat expires and the call fails.
    const lost = call('await_agents');
    await vi.waitFor(() => expect(calls).toHaveLength(2), { interval: 20 });
    stopped = true;
    reader.disconnect();
    await reading;
    await sleep(200);
    await redis.del(alive); // as SUPERVISOR_ALIVE_MS after its last beat
    await expect(lost).rejects.toMatchObject({
      code: 'supervisor_lost',
      fields: { supervisorId, tool: 'await_agents', requestId: calls[1]?.requestId },
    });
  }, 15_000);

  it('fails supervisor_lost at once when the job says its supervisor beats and its key is already gone', async () => {
    const keys = new ScaleoutKeys('test', uniqueName('host-gone'));
    const signal = new AbortController().signal;
    // Died long before the call: no key to see. Rounds of 10 minutes: without the job's word the
    // call would wait one round, then wait on (a key never seen says nothing).
    const call = callHostTool(
      redis,
      pool,
      keys,
      'sup-dead',
      { agentId: 'a1', name: 'await_agents', args: {} },
      signal,
      {
        pollMs: 600_000,
        beats: true,
      },
    );
    await expect(call).rejects.toMatchObject({
      code: 'supervisor_lost',
      fields: { supervisorId: 'sup-dead', tool: 'await_agents' },
    });

    // A job of an earlier supervisor (no word): the key's absence says nothing, and its answer comes.
    const older = callHostTool(
      redis,
      pool,
      keys,
      'sup-old',
      { agentId: 'a2', name: 'lookup', args: {} },
      signal,
      {
        pollMs: 50,
      },
    );
    const [, entries] = await vi.waitFor(
      async () => {
        const read = await redis.xrange(keys.requests('sup-old'), '-', '+');
        expect(read).toHaveLength(1);
        return read[0] ?? ['', []];
      },
      { interval: 20 },
    );
    const requestId = (JSON.parse(entries[1] ?? '{}') as { requestId: string }).requestId;
    await answerHostCall(redis, keys, requestId, { ok: true, text: 'found' });
    expect(await older).toEqual({ ok: true, text: 'found' });
  }, 15_000);
});
