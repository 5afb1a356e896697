/**
 * The redis engine's search for a resumed parent's children (`Engine.childStarts`): its bound
 * counts the streams that name that parent, not every journal stream of the queue, so in a run with
 * more agents than the bound the child of a cut-off `spawn_agent` late in the run is still found.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EngineContext } from '../../../src/engines/engine.ts';
import { clearFinishedAgent } from '../../../src/engines/redis/agent-state.ts';
import { RedisApprovals } from '../../../src/engines/redis/approvals.ts';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
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
  async function writeStarted(
    queue: string,
    agentId: string,
    parentId?: string,
    spawnCallId?: string,
    client: Redis = redis,
  ) {
    const memory = new MemoryJournal();
    new FakeAgent(memory).start();
    const [started] = memory.events;
    if (started?.type !== 'Started') throw new Error('FakeAgent wrote no Started event');
    const { seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...body } = started;
    const journal = new RedisJournal({ redis: client, key: `${PREFIX}:${queue}:agent:${agentId}:journal` });
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
    // Without the token each search listed every key again (three SCANs here); with it, the
    // second resume SCANned again (two); now it reads the registry (one, the engine's first).
    expect((await scans()) - before).toBe(1);
  });

  it('lists the keys with SCAN once per engine: resumes one after another read the registry', async () => {
    const queue = uniqueName('child-starts');
    await writeStarted(queue, 'root-child', 'root', 'call-root');
    const engine = engineOn(queue);
    await engine.start();
    const other = new Redis(server.url);
    const before = await scans();
    try {
      for (let i = 0; i < 10; i += 1) {
        // Written by another client (a worker) after the previous resume's listing.
        await writeStarted(queue, `s-${i}-child`, `s-${i}`, `call-${i}`, other);
        const found = await engine.childStarts(`s-${i}`, { ...bounds, search: {} });
        expect(found.starts.map((start) => start.agentId)).toEqual([`s-${i}-child`]);
      }
      expect((await engine.childStarts('root', { ...bounds, search: {} })).starts).toHaveLength(1);
    } finally {
      other.disconnect();
    }
    // Before, each resume SCANned the whole keyspace (eleven SCANs here).
    expect((await scans()) - before).toBe(1);
  });

  it('finds the streams of earlier versions (not registered) by its first SCAN, and SCANs again when the registry is deleted', async () => {
    const queue = uniqueName('child-starts');
    const keys = new ScaleoutKeys(PREFIX, queue);
    await writeStarted(queue, 'old-child', 'p', 'call-old');
    // As an earlier version left it: no registry.
    await redis.del(keys.journals, keys.journalsSeq);
    await writeStarted(queue, 'new-child', 'p', 'call-new');
    const engine = engineOn(queue);
    await engine.start();
    const before = await scans();

    const found = await engine.childStarts('p', { ...bounds, search: {} });
    expect(found.starts.map((start) => start.agentId).sort()).toEqual(['new-child', 'old-child']);
    expect((await scans()) - before).toBe(1);

    // The registry deleted (its counter behind what the index saw): the next listing SCANs again.
    await writeStarted(queue, 'lost-child', 'q', 'call-lost');
    await redis.del(keys.journals, keys.journalsSeq);
    expect((await engine.childStarts('q', { ...bounds, search: {} })).starts).toHaveLength(1);
    expect((await scans()) - before).toBe(2);
  });

  it('registers a stream as it is created, and a fork as it is renamed', async () => {
    const queue = uniqueName('child-starts');
    const keys = new ScaleoutKeys(PREFIX, queue);
    await writeStarted(queue, 'a', 'p', 'call-a');
    await writeStarted(queue, 'b');
    expect(await redis.zrange(keys.journals, '0', '-1', 'WITHSCORES')).toEqual(['a', '1', 'b', '2']);
    const engine = engineOn(queue);
    await engine.forkJournal('a', 'a-fork');
    expect(await redis.zscore(keys.journals, 'a-fork')).toBe('3');
    // A fork's draft is never registered.
    expect(await redis.zcard(keys.journals)).toBe(3);
  });

  it('takes a journal out of the registry as its keys go: at once with retainSeconds 0, once expired otherwise', async () => {
    const queue = uniqueName('child-starts');
    const keys = new ScaleoutKeys(PREFIX, queue);
    const approvals = new RedisApprovals(redis, keys);
    for (const id of ['gone', 'expires', 'kept', 'last']) await writeStarted(queue, id);
    expect(await redis.zcard(keys.journals)).toBe(4);

    await clearFinishedAgent(redis, keys, approvals, 'gone', { parkMarkSeen: false, retainSeconds: 0 });
    expect(await redis.exists(keys.journal('gone'))).toBe(0);
    expect(await redis.zscore(keys.journals, 'gone')).toBeNull();

    await clearFinishedAgent(redis, keys, approvals, 'kept', { parkMarkSeen: false, retainSeconds: 3600 });
    await clearFinishedAgent(redis, keys, approvals, 'expires', {
      parkMarkSeen: false,
      retainSeconds: 0.001,
    });
    await vi.waitFor(async () => expect(await redis.exists(keys.journal('expires'))).toBe(0), {
      interval: 10,
    });
    // Still registered until a later retention finds it expired.
    expect(await redis.zscore(keys.journals, 'expires')).not.toBeNull();
    await clearFinishedAgent(redis, keys, approvals, 'last', { parkMarkSeen: false, retainSeconds: 3600 });
    expect(await redis.zrange(keys.journals, '0', '-1')).toEqual(['kept', 'last']);
    expect((await redis.zrange(keys.journalsExpiring, '0', '-1')).sort()).toEqual(['kept', 'last']);
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
