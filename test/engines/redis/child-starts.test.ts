/**
 * The redis engine's search for a resumed parent's children (`Engine.childStarts`): its bound
 * counts the streams that name that parent, not every journal stream of the queue, so in a run with
 * more agents than the bound the child of a cut-off `spawn_agent` late in the run is still found.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EngineContext } from '../../../src/engines/engine.ts';
import { prepareRedisOptions } from '../../../src/engines/redis/options.ts';
import { RedisEngine, type RedisEngineOptions } from '../../../src/engines/redis/redis-engine.ts';
import { RedisJournal } from '../../../src/engines/redis/stream-journal.ts';
import type { AuditEventInput } from '../../../src/journal/events.ts';
import { MemoryJournal } from '../../../src/journal/sink.ts';
import { FakeAgent } from '../../journal/helpers.ts';
import { redisServerPath, skipReason, TestRedis, uniqueName } from './helpers.ts';

const PREFIX = 'troupe-child-starts';
const bounds = { maxJournals: 3, maxBytes: 1024 * 1024, maxHeadBytes: 1024 * 1024 };

describe(`RedisEngine.childStarts${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;
  const engines: RedisEngine[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
  });

  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.close();
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
  });

  /** A journal stream holding only a Started event for `agentId`, spawned by `parentId` when given. */
  async function writeStarted(queue: string, agentId: string, parentId?: string, spawnCallId?: string) {
    const memory = new MemoryJournal();
    new FakeAgent(memory).start();
    const [started] = memory.events;
    if (started?.type !== 'Started') throw new Error('FakeAgent wrote no Started event');
    const { seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...body } = started;
    const journal = new RedisJournal({ redis, key: `${PREFIX}:${queue}:agent:${agentId}:journal` });
    journal.append({
      ...body,
      agentId,
      task: `the task of ${agentId}`,
      ...(parentId === undefined ? {} : { parentId }),
      ...(spawnCallId === undefined ? {} : { spawnCallId }),
    } as AuditEventInput);
    await journal.flushed();
  }

  /** SCAN calls the server has answered so far (this server's only SCANs are this file's). */
  async function scans(): Promise<number> {
    return Number(/cmdstat_scan:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
  }

  function engineOn(queueName: string): RedisEngine {
    const options = {
      providers: {},
      limits: {},
      toolModules: [],
      redis: prepareRedisOptions({ redisUrl: server.url, queueName, prefix: PREFIX }),
    } as unknown as RedisEngineOptions;
    const host = { emit: () => {} } as unknown as EngineContext['host'];
    const engine = new RedisEngine(options, { host, hostTools: [] });
    engines.push(engine);
    return engine;
  }

  it('finds a child past more top-level streams than its bound: only streams naming the parent count', async () => {
    const queue = uniqueName('child-starts');
    // Plan entries (no parent) outnumber the bound, in whatever order SCAN lists them.
    for (let i = 0; i < 8; i += 1) await writeStarted(queue, `a-${i}`);
    await writeStarted(queue, 'z-child', 'a-5', 'call-1');
    await writeStarted(queue, 'z-other', 'a-6', 'call-2');
    const engine = engineOn(queue);

    const found = await engine.childStarts('a-5', bounds);

    // Before, the first 3 streams scanned were all the search read: the child was most likely not
    // examined (and 7 streams were named in the warning).
    expect(found).toEqual({
      starts: [
        { agentId: 'z-child', spawnCallId: 'call-1', agent: expect.any(String), task: 'the task of z-child' },
      ],
      notExamined: [],
    });
  });

  it('names the children of that parent past its bound, and finds streams written since the last search', async () => {
    const queue = uniqueName('child-starts');
    for (let i = 0; i < 5; i += 1) await writeStarted(queue, `c-${i}`, 'p', `call-${i}`);
    const engine = engineOn(queue);

    const first = await engine.childStarts('p', bounds);
    expect(first.starts).toHaveLength(3);
    expect(first.notExamined).toHaveLength(2);

    await writeStarted(queue, 'late', 'q', 'call-late');
    const later = await engine.childStarts('q', bounds);
    expect(later.starts.map((start) => start.agentId)).toEqual(['late']);
  });

  it('lists the journal keys once per search token: the searches of one resume do not list them again', async () => {
    const queue = uniqueName('child-starts');
    await writeStarted(queue, 'c-0', 'p', 'call-0');
    const engine = engineOn(queue);
    const resume = {};
    const before = await scans();

    expect((await engine.childStarts('p', { ...bounds, search: resume })).starts).toHaveLength(1);
    await writeStarted(queue, 'late', 'q', 'call-late');
    // The same resume's later search (under a finished descendant) reuses the listing it made.
    expect((await engine.childStarts('q', { ...bounds, search: resume })).starts).toEqual([]);
    // Another resume lists the keys again, and finds the stream written since.
    const later = await engine.childStarts('q', { ...bounds, search: {} });
    expect(later.starts.map((start) => start.agentId)).toEqual(['late']);
    // Without the token each search listed every key again (three SCANs here).
    expect((await scans()) - before).toBe(2);
  });

  it('shares listings between resumes adopted together: K resumed agents list the keys at most twice', async () => {
    const queue = uniqueName('child-starts');
    const resumed = 8;
    for (let i = 0; i < resumed; i += 1) await writeStarted(queue, `k-${i}-child`, `k-${i}`, `call-${i}`);
    const engine = engineOn(queue);
    await engine.start();
    const before = await scans();

    // The adoptions of K resumed agents, each with its own search token, at once.
    const found = await Promise.all(
      Array.from({ length: resumed }, (_, i) => engine.childStarts(`k-${i}`, { ...bounds, search: {} })),
    );

    expect(found.map(({ starts }) => starts.map((start) => start.agentId))).toEqual(
      Array.from({ length: resumed }, (_, i) => [`k-${i}-child`]),
    );
    // One SCAN per listing here (fewer than 1,000 keys): before, each resume listed (8 SCANs).
    expect((await scans()) - before).toBeLessThanOrEqual(2);
  });
});
