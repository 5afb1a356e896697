import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisAdmission } from '../../../src/engines/redis/admission.ts';
import { clearFinishedAgent, readAgentStart } from '../../../src/engines/redis/agent-state.ts';
import { RedisApprovals } from '../../../src/engines/redis/approvals.ts';
import { BlockingPool } from '../../../src/engines/redis/blocking-pool.ts';
import { closeRedis, connectRedis, resolveRedisUrl } from '../../../src/engines/redis/connection.ts';
import { Inbox } from '../../../src/engines/redis/inbox.ts';
import { checkAgentId, ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { prepareRedisOptions } from '../../../src/engines/redis/options.ts';
import { SignalSender } from '../../../src/engines/redis/signals.ts';
import { RedisJournal, readRedisJournal } from '../../../src/engines/redis/stream-journal.ts';
import type { AuditEventInput } from '../../../src/journal/events.ts';
import { MemoryJournal } from '../../../src/journal/sink.ts';
import { chainProblem, redisServerPath, skipReason, TestRedis, uniqueName } from './helpers.ts';

const fixedClock = (): Date => new Date('2025-01-02T03:04:05.000Z');

function sampleEvents(agentId: string): AuditEventInput[] {
  return [
    {
      type: 'Started',
      agentId,
      definition: { name: 'tester', hash: 'h' },
      provider: 'simulated',
      model: 'm',
      contextWindow: 1000,
      maxInputTokens: 900,
      context: [],
      task: 'Do it. api_key=sk-abcdefghijklmnopqrstuvwxyz0123456789',
      metadata: {},
      systemPrompt: 'SYSTEM',
      toolSpecs: [],
    },
    { type: 'InferenceSubmitted', agentId, round: 1, inputHash: 'x', estimatedTokens: 10, tools: [] },
    {
      type: 'ToolCall',
      agentId,
      round: 1,
      callId: 'c1',
      name: 'record_step',
      modelName: 'record_step',
      args: {},
    },
    {
      type: 'ToolResult',
      agentId,
      round: 1,
      callId: 'c1',
      name: 'record_step',
      ok: true,
      projectionAccepted: true,
      text: 'done',
      stateUpdates: [],
      displayedStateKeys: [],
    },
  ];
}

/** Counts the script calls (EVALSHA) `redis` writes, auto-pipelined or not. */
function scriptCalls(redis: Redis) {
  const original = redis.sendCommand.bind(redis);
  const calls = vi.fn();
  const sendCommand = vi.spyOn(redis, 'sendCommand').mockImplementation((command, stream) => {
    if (command.name === 'evalsha') calls();
    return original(command, stream);
  });
  return Object.assign(calls, { mockRestore: () => sendCommand.mockRestore() });
}

describe(`scale-out primitives on a real Redis${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;
  let keys: ScaleoutKeys;

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: null });
    keys = new ScaleoutKeys('test', uniqueName('primitives'));
  });

  afterAll(async () => {
    await redis?.quit();
    await server?.destroy();
  });

  describe('the journal stream', () => {
    it('holds exactly the events a memory journal holds for the same input, and reads back in order', async () => {
      const memory = new MemoryJournal({ now: fixedClock });
      const stream = new RedisJournal({ redis, key: keys.journal('a1'), now: fixedClock });
      for (const input of sampleEvents('a1')) expect(stream.appendEvent(input)).toEqual(memory.append(input));
      await stream.flushed();
      const read = await readRedisJournal(redis, keys.journal('a1'));
      expect(read).toEqual(memory.events);
      expect(chainProblem(read)).toBeUndefined();
      expect(JSON.stringify(read)).not.toContain('sk-abcdefghijklmnopqrstuvwxyz');
    });

    it('continues the chain of the events it was opened with', async () => {
      const [first, ...rest] = sampleEvents('a2');
      const opening = new RedisJournal({ redis, key: keys.journal('a2'), now: fixedClock });
      if (first) opening.append(first);
      await opening.flushed();
      const resumed = new RedisJournal({
        redis,
        key: keys.journal('a2'),
        events: await readRedisJournal(redis, keys.journal('a2')),
        now: fixedClock,
      });
      for (const input of rest) resumed.append(input);
      await resumed.flushed();
      const read = await readRedisJournal(redis, keys.journal('a2'));
      expect(read.map((event) => event.type)).toEqual([
        'Started',
        'InferenceSubmitted',
        'ToolCall',
        'ToolResult',
      ]);
      expect(chainProblem(read)).toBeUndefined();
    });

    it('accepts a resent append that already landed, and refuses a different event at that position', async () => {
      const inputs = sampleEvents('a3');
      const one = new RedisJournal({ redis, key: keys.journal('a3'), now: fixedClock });
      const again = new RedisJournal({ redis, key: keys.journal('a3'), now: fixedClock });
      for (const input of inputs) one.append(input);
      await one.flushed();
      for (const input of inputs) again.append(input);
      await expect(again.flushed()).resolves.toBeUndefined();

      const failures: string[] = [];
      const other = new RedisJournal({
        redis,
        key: keys.journal('a3'),
        now: () => new Date('2030-01-01T00:00:00.000Z'),
        onFailure: (error) => failures.push(error.code),
      });
      for (const input of inputs) other.append(input);
      await expect(other.flushed()).rejects.toMatchObject({ code: 'journal_conflict' });
      expect(failures).toEqual(['journal_conflict']);
      expect(await readRedisJournal(redis, keys.journal('a3'))).toHaveLength(inputs.length);
    });

    it('refuses an append that would leave a gap', async () => {
      const inputs = sampleEvents('a4');
      const writer = new RedisJournal({ redis, key: keys.journal('a4'), now: fixedClock });
      const [first, second] = inputs;
      if (first) writer.append(first);
      await writer.flushed();
      const memory = new MemoryJournal({ now: fixedClock });
      for (const input of inputs.slice(0, 3)) memory.append(input);
      // A writer that believes two events are stored where only one is.
      const ahead = new RedisJournal({
        redis,
        key: keys.journal('a4'),
        events: memory.events.slice(0, 2),
        now: fixedClock,
      });
      if (second) ahead.append(second);
      await expect(ahead.flushed()).rejects.toMatchObject({ code: 'journal_conflict' });
    });

    it('fences off a writer that does not hold the lock, and drops its later appends', async () => {
      await redis.set(keys.jobLock('a5'), 'token-of-the-new-owner');
      const failures: string[] = [];
      const zombie = new RedisJournal({
        redis,
        key: keys.journal('a5'),
        fence: { key: keys.jobLock('a5'), token: 'token-of-the-old-owner' },
        onFailure: (error) => failures.push(error.code),
      });
      for (const input of sampleEvents('a5')) zombie.append(input);
      await expect(zombie.flushed()).rejects.toMatchObject({ code: 'journal_fenced' });
      expect(failures).toEqual(['journal_fenced']);
      expect(await readRedisJournal(redis, keys.journal('a5'))).toEqual([]);

      const owner = new RedisJournal({
        redis,
        key: keys.journal('a5'),
        fence: { key: keys.jobLock('a5'), token: 'token-of-the-new-owner' },
      });
      for (const input of sampleEvents('a5')) owner.append(input);
      await owner.flushed();
      expect(await readRedisJournal(redis, keys.journal('a5'))).toHaveLength(4);
    });

    it("sends a turn's commits of every journal on the connection in one script call", async () => {
      const evalsha = scriptCalls(redis);
      try {
        const streams = ['a7', 'a7b', 'a7c'].map(
          (id) => new RedisJournal({ redis, key: keys.journal(id), now: fixedClock }),
        );
        for (const [index, stream] of streams.entries()) {
          for (const input of sampleEvents(`a7-${index}`)) stream.append(input);
          stream.commit();
        }
        // Queued for the end of the turn, as ioredis's auto-pipelining queues a command.
        expect(evalsha).not.toHaveBeenCalled();
        await Promise.all(streams.map((stream) => stream.flushed()));
        expect(evalsha).toHaveBeenCalledTimes(1);
        for (const id of ['a7', 'a7b', 'a7c']) {
          expect(await readRedisJournal(redis, keys.journal(id))).toHaveLength(4);
        }
      } finally {
        evalsha.mockRestore();
      }
    });

    it('fails only the journal whose append is refused when journals share a call', async () => {
      await redis.set(keys.jobLock('a13'), 'token-of-the-new-owner');
      const failures: string[] = [];
      const zombie = new RedisJournal({
        redis,
        key: keys.journal('a13'),
        fence: { key: keys.jobLock('a13'), token: 'token-of-the-old-owner' },
        onFailure: (error) => failures.push(error.code),
      });
      const healthy = new RedisJournal({ redis, key: keys.journal('a14'), now: fixedClock });
      for (const input of sampleEvents('a13')) zombie.append(input);
      for (const input of sampleEvents('a14')) healthy.append(input);
      zombie.commit();
      healthy.commit();
      await expect(zombie.flushed()).rejects.toMatchObject({ code: 'journal_fenced' });
      await expect(healthy.flushed()).resolves.toBeUndefined();
      expect(failures).toEqual(['journal_fenced']);
      expect(await readRedisJournal(redis, keys.journal('a13'))).toEqual([]);
      expect(await readRedisJournal(redis, keys.journal('a14'))).toHaveLength(4);
    });

    it('reads a lock that journals in one call share once, and still fences each journal by its token', async () => {
      await redis.set(keys.jobLock('batch'), 'token-of-the-batch');
      const gets = async (): Promise<number> =>
        Number(/cmdstat_get:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
      const fence = (token: string) => ({ key: keys.jobLock('batch'), token });
      const members = ['a18', 'a19'].map(
        (id) =>
          new RedisJournal({
            redis,
            key: keys.journal(id),
            fence: fence('token-of-the-batch'),
            now: fixedClock,
          }),
      );
      const zombie = new RedisJournal({ redis, key: keys.journal('a20'), fence: fence('an-old-token') });
      const before = await gets();
      for (const [index, journal] of [...members, zombie].entries()) {
        for (const input of sampleEvents(['a18', 'a19', 'a20'][index] ?? '')) journal.append(input);
        journal.commit();
      }
      await Promise.all(members.map((journal) => journal.flushed()));
      await expect(zombie.flushed()).rejects.toMatchObject({ code: 'journal_fenced' });
      expect((await gets()) - before).toBe(1);
      expect(await readRedisJournal(redis, keys.journal('a18'))).toHaveLength(4);
      expect(await readRedisJournal(redis, keys.journal('a19'))).toHaveLength(4);
      expect(await readRedisJournal(redis, keys.journal('a20'))).toEqual([]);
    });

    it('sends events nobody committed at the end of the event-loop turn', async () => {
      const evalsha = scriptCalls(redis);
      try {
        const stream = new RedisJournal({ redis, key: keys.journal('a8'), now: fixedClock });
        for (const input of sampleEvents('a8')) stream.append(input);
        // Runs after the journal's end-of-turn commit, which was scheduled first.
        await new Promise<void>((resolve) => setImmediate(resolve));
        expect(evalsha).toHaveBeenCalledTimes(1);
        await stream.flushed();
        expect(await readRedisJournal(redis, keys.journal('a8'))).toHaveLength(4);
      } finally {
        evalsha.mockRestore();
      }
    });

    it('writes a commit to the connection before a signal sent after it in the same turn', async () => {
      // The worker's connection auto-pipelines; an explicit pipeline (the signal sender's) is
      // written at once, ahead of what the auto-pipeline still holds.
      const worker = new Redis(server.url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
      // monitor() opens a connection of its own: the client it is called on is closed too, or it
      // reconnects for the rest of the test run once the server stops (ioredis's "Unhandled
      // error event" on stderr, 68 times in one CI log).
      const base = new Redis(server.url);
      const monitor = await base.monitor();
      try {
        const seen: string[] = [];
        monitor.on('monitor', (_time: string, args: string[]) => {
          // The append is EVAL on a connection's first call, EVALSHA after (script.ts).
          if (args[0] === 'eval' || args[0] === 'evalsha') seen.push('script');
          else if (args[0] === 'xadd') seen.push('xadd');
        });
        await worker.ping();
        await redis.ping();
        const journal = new RedisJournal({ redis: worker, key: keys.journal('a8s'), now: fixedClock });
        const signals = new SignalSender(worker, keys);
        for (const input of sampleEvents('a8s')) journal.append(input);
        // As the worker's onSignal does: commit, then send the signal that reports the events.
        journal.commit();
        signals.send('sup-a8s', { type: 'ended', agentId: 'a8s' });
        await journal.flushed();
        await vi.waitFor(() => expect(seen).toHaveLength(2));
        expect(seen).toEqual(['script', 'xadd']);
      } finally {
        monitor.disconnect();
        base.disconnect();
        await worker.quit();
      }
    });

    it("reads neither the stream's top nor an entry for an append that follows on, new or resumed", async () => {
      const [first, second, ...rest] = sampleEvents('a9');
      const stream = new RedisJournal({ redis, key: keys.journal('a9'), now: fixedClock });
      if (first) stream.append(first);
      await stream.flushed();
      const reads = async (): Promise<number> => {
        const stats = await redis.info('commandstats');
        const calls = (name: string): number =>
          Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
        return calls('xrange') + calls('xrevrange');
      };
      const before = await reads();
      if (second) stream.append(second);
      await stream.flushed();
      expect(await reads()).toBe(before);
      // A journal opened with what readRedisJournal read knows the stream's length too.
      const events = await readRedisJournal(redis, keys.journal('a9'));
      const afterRead = await reads();
      const resumed = new RedisJournal({ redis, key: keys.journal('a9'), events, now: fixedClock });
      for (const input of rest) {
        resumed.append(input);
        resumed.commit();
      }
      await resumed.flushed();
      expect(await reads()).toBe(afterRead);
      expect(chainProblem(await readRedisJournal(redis, keys.journal('a9')))).toBeUndefined();
    });

    it('refuses an append after the stream lost entries its writer knows of', async () => {
      const [first, second, third] = sampleEvents('a15');
      const writer = new RedisJournal({ redis, key: keys.journal('a15'), now: fixedClock });
      if (first) writer.append(first);
      await writer.flushed();
      if (second) writer.append(second);
      await writer.flushed();
      // Lost with a server that restarted from an older file, or a failover: one entry is gone.
      const top = await redis.xrevrange(keys.journal('a15'), '+', '-', 'COUNT', 1);
      await redis.xdel(keys.journal('a15'), top[0]?.[0] ?? '');
      if (third) writer.append(third);
      await expect(writer.flushed()).rejects.toMatchObject({
        code: 'journal_conflict',
        message: expect.stringContaining('TROUPE_JOURNAL_GAP'),
      });
      expect(await readRedisJournal(redis, keys.journal('a15'))).toHaveLength(1);

      // The whole stream gone (expired, deleted): the same.
      const events = await readRedisJournal(redis, keys.journal('a15'));
      const resumed = new RedisJournal({ redis, key: keys.journal('a15'), events, now: fixedClock });
      await redis.del(keys.journal('a15'));
      if (second) resumed.append(second);
      await expect(resumed.flushed()).rejects.toMatchObject({ code: 'journal_conflict' });
      expect(await redis.exists(keys.journal('a15'))).toBe(0);
    });

    it('refuses an append when another writer added an entry, and accepts its own resend', async () => {
      const [first, second] = sampleEvents('a16');
      const one = new RedisJournal({ redis, key: keys.journal('a16'), now: fixedClock });
      if (first) one.append(first);
      await one.flushed();
      const events = await readRedisJournal(redis, keys.journal('a16'));
      // Both believe the stream holds one entry; the first to append wins, the other conflicts.
      const winner = new RedisJournal({ redis, key: keys.journal('a16'), events, now: fixedClock });
      const loser = new RedisJournal({
        redis,
        key: keys.journal('a16'),
        events,
        now: () => new Date('2030-01-01T00:00:00.000Z'),
      });
      if (second) winner.append(second);
      await winner.flushed();
      if (second) loser.append(second);
      await expect(loser.flushed()).rejects.toMatchObject({ code: 'journal_conflict' });
      // The same entry again from a writer that knows only the first (a resend): accepted, no change.
      const resend = new RedisJournal({ redis, key: keys.journal('a16'), events, now: fixedClock });
      if (second) resend.append(second);
      await expect(resend.flushed()).resolves.toBeUndefined();
      expect(await readRedisJournal(redis, keys.journal('a16'))).toHaveLength(2);
    });

    it('refuses an append whose id the stream refuses, though its length is what the writer knows', async () => {
      const [first, second, third] = sampleEvents('a17');
      const writer = new RedisJournal({ redis, key: keys.journal('a17'), now: fixedClock });
      if (first) writer.append(first);
      await writer.flushed();
      if (second) writer.append(second);
      await writer.flushed();
      // Journals are never edited so (docs/scaleout.md): the top replaced by an entry above the next id.
      const top = await redis.xrevrange(keys.journal('a17'), '+', '-', 'COUNT', 1);
      await redis.xdel(keys.journal('a17'), top[0]?.[0] ?? '');
      await redis.xadd(keys.journal('a17'), '9-0', 'e', 'not ours');
      if (third) writer.append(third);
      await expect(writer.flushed()).rejects.toMatchObject({ code: 'journal_conflict' });
      expect(await redis.xlen(keys.journal('a17'))).toBe(2);
    });

    it('fails to read a stream whose entries are not events in sequence', async () => {
      await redis.xadd(keys.journal('a6'), '1-0', 'e', '{"not":"an event"}');
      await expect(readRedisJournal(redis, keys.journal('a6'))).rejects.toMatchObject({
        code: 'journal_corrupt',
      });
    });

    it('stores what it holds when its call leaves as one entry, with the id of its last event, as JSONL', async () => {
      const [first, second, ...rest] = sampleEvents('a10');
      const memory = new MemoryJournal({ now: fixedClock });
      const stream = new RedisJournal({ redis, key: keys.journal('a10'), now: fixedClock });
      if (first) {
        stream.append(first);
        memory.append(first);
      }
      await stream.flushed();
      // Committed, then more appended in the same turn: the turn's call takes them all, as one entry.
      if (second) {
        stream.append(second);
        memory.append(second);
      }
      stream.commit();
      for (const input of rest) {
        stream.append(input);
        memory.append(input);
      }
      await stream.flushed();
      const entries = await redis.xrange(keys.journal('a10'), '-', '+');
      expect(entries.map(([id]) => id)).toEqual(['1-0', '4-0']);
      expect(entries[1]?.[1][1]?.split('\n')).toHaveLength(3);
      expect(await readRedisJournal(redis, keys.journal('a10'))).toEqual(memory.events);
    });

    it('holds what is appended while its entry is unanswered, and sends it as the next entry', async () => {
      const [first, ...rest] = sampleEvents('a10b');
      const memory = new MemoryJournal({ now: fixedClock });
      const stream = new RedisJournal({ redis, key: keys.journal('a10b'), now: fixedClock });
      if (first) {
        stream.append(first);
        memory.append(first);
      }
      stream.commit();
      // The call leaves at the end of this turn; what follows is appended before its answer.
      await new Promise((resolve) => setImmediate(resolve));
      for (const input of rest) {
        stream.append(input);
        memory.append(input);
        stream.commit();
      }
      await stream.flushed();
      const entries = await redis.xrange(keys.journal('a10b'), '-', '+');
      expect(entries.map(([id]) => id)).toEqual(['1-0', '4-0']);
      expect(await readRedisJournal(redis, keys.journal('a10b'))).toEqual(memory.events);
    });

    it('reads and continues a stream written one entry per event', async () => {
      const inputs = sampleEvents('a11');
      const memory = new MemoryJournal({ now: fixedClock });
      for (const input of inputs) memory.append(input);
      // The layout of earlier versions: entry `<seq + 1>-0` holds event `seq` alone.
      for (const event of memory.events.slice(0, 2)) {
        await redis.xadd(keys.journal('a11'), `${event.seq + 1}-0`, 'e', JSON.stringify(event));
      }
      const read = await readRedisJournal(redis, keys.journal('a11'));
      expect(read).toEqual(memory.events.slice(0, 2));
      const resumed = new RedisJournal({ redis, key: keys.journal('a11'), events: read, now: fixedClock });
      for (const input of inputs.slice(2)) resumed.append(input);
      await resumed.flushed();
      expect(await readRedisJournal(redis, keys.journal('a11'))).toEqual(memory.events);
      expect(await redis.xlen(keys.journal('a11'))).toBe(3);
    });

    it('fails to read an entry whose id is not that of its last event', async () => {
      const memory = new MemoryJournal({ now: fixedClock });
      for (const input of sampleEvents('a12')) memory.append(input);
      const lines = memory.events.slice(0, 2).map((event) => JSON.stringify(event));
      await redis.xadd(keys.journal('a12'), '1-0', 'e', lines.join('\n'));
      await expect(readRedisJournal(redis, keys.journal('a12'))).rejects.toMatchObject({
        code: 'journal_corrupt',
      });
    });
  });

  describe('the inbox stream', () => {
    it('numbers instructions in order and answers a repeated ask for the same index with the same text', async () => {
      const inbox = new Inbox(redis, keys);
      expect(await inbox.send('i1', 'first')).toEqual({ index: 0, parked: false });
      expect(await inbox.send('i1', 'second')).toEqual({ index: 1, parked: false });
      expect(await inbox.get('i1', 0)).toBe('first');
      expect(await inbox.get('i1', 1)).toBe('second');
      expect(await inbox.get('i1', 1)).toBe('second');
      expect(await inbox.get('i1', 2)).toBeUndefined();
    });

    it('wakes a blocking wait when its instruction arrives, and tells the sender when the agent is parked', async () => {
      const inbox = new Inbox(redis, keys);
      const pool = new BlockingPool(redis);
      await inbox.send('i2', 'zero');
      const waiting = inbox.wait(pool, 'i2', 1, 30_000, new AbortController().signal);
      await redis.set(keys.parked('i2'), JSON.stringify({ index: 1, deadline: null }));
      expect(await inbox.send('i2', 'one')).toEqual({ index: 1, parked: true });
      expect(await waiting).toBe('one');
      pool.close();
    });

    it('re-delivers at an index idempotently, exempt from the unread limit', async () => {
      const inbox = new Inbox(redis, keys, 1);
      expect(await inbox.send('i5', 'zero', 0)).toEqual({ index: 0, parked: false });
      expect(await inbox.send('i5', 'zero again', 0)).toEqual({ index: 0, parked: false });
      await expect(inbox.send('i5', 'new')).rejects.toMatchObject({ code: 'instruction_queue_full' });
      expect(await inbox.send('i5', 'one', 1)).toEqual({ index: 1, parked: false });
      expect(await inbox.get('i5', 0)).toBe('zero');
      expect(await inbox.get('i5', 1)).toBe('one');
      expect(await inbox.get('i5', 2)).toBeUndefined();
    });

    it('refuses a send past the unread limit, and takes sends again once the agent has asked for more', async () => {
      const inbox = new Inbox(redis, keys, 2);
      await inbox.send('i4', 'a');
      await inbox.send('i4', 'b');
      await expect(inbox.send('i4', 'c')).rejects.toMatchObject({
        code: 'instruction_queue_full',
        fields: { agentId: 'i4', pending: 2, limit: 2 },
      });
      // Asking for instruction 0 takes it: one is unread, so one more fits.
      expect(await inbox.ask('i4', 0)).toBe('a');
      expect(await inbox.send('i4', 'c')).toEqual({ index: 2, parked: false });
      await expect(inbox.send('i4', 'd')).rejects.toMatchObject({
        code: 'instruction_queue_full',
        fields: { pending: 2 },
      });
      expect(await inbox.ask('i4', 2)).toBe('c');
      expect(await inbox.send('i4', 'd')).toEqual({ index: 3, parked: false });
      // An older ask (a wait repeated after a restart) does not move the mark back.
      expect(await inbox.ask('i4', 1)).toBe('b');
      expect(await inbox.send('i4', 'e')).toEqual({ index: 4, parked: false });
      await expect(inbox.send('i4', 'f')).rejects.toMatchObject({ code: 'instruction_queue_full' });
    });

    it('ends a blocking wait with null when it is aborted or its time is up', async () => {
      const inbox = new Inbox(redis, keys);
      const pool = new BlockingPool(redis);
      const controller = new AbortController();
      const aborted = inbox.wait(pool, 'i3', 0, 30_000, controller.signal);
      controller.abort(new Error('stop'));
      expect(await aborted).toBeNull();
      expect(await inbox.wait(pool, 'i3', 0, 1, new AbortController().signal)).toBeNull();
      pool.close();
    });
  });

  describe("an agent's keys at the start and the end of its job", () => {
    const commandCalls = async (): Promise<number> => {
      const stats = await redis.info('commandstats');
      let total = 0;
      for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        if (match[1] !== 'info') total += Number(match[2]);
      }
      return total;
    };

    it('reads the cancel flag, the park mark and the journal', async () => {
      const journal = new RedisJournal({ redis, key: keys.journal('s1'), now: fixedClock });
      for (const input of sampleEvents('s1')) journal.append(input);
      await journal.flushed();
      expect(await readAgentStart(redis, keys, 's1')).toMatchObject({
        cancelReason: null,
        parkedText: null,
        events: [{ seq: 0 }, { seq: 1 }, { seq: 2 }, { seq: 3 }],
      });
      await redis.set(keys.cancel('s1'), 'enough');
      await redis.set(keys.parked('s1'), '{"index":0,"deadline":null}');
      expect(await readAgentStart(redis, keys, 's1')).toMatchObject({
        cancelReason: 'enough',
        parkedText: '{"index":0,"deadline":null}',
      });
      expect(await readAgentStart(redis, keys, 'never-ran')).toEqual({
        cancelReason: null,
        parkedText: null,
        events: [],
      });
    });

    it('clears the park mark and undecided approval requests of a finished agent', async () => {
      const approvals = new RedisApprovals(redis, keys);
      const request = {
        requestId: 'r-s2',
        agentId: 's2',
        callId: 'c1',
        tool: 'Bash',
        modelName: 'Bash',
        args: {},
        toolArgs: {},
        argsHash: 'h',
        rule: 'Bash',
        reason: 'asks',
        deadline: null,
        requestedAt: '2025-01-02T03:04:05.000Z',
      };
      expect(await approvals.request(request)).toBe(true);
      await approvals.request({ ...request, agentId: 's3', requestId: 'r-s3' });
      await redis.set(keys.parked('s2'), '{"index":0,"deadline":null}');
      expect((await approvals.pending()).map((pending) => pending.agentId).sort()).toEqual(['s2', 's3']);
      await clearFinishedAgent(redis, keys, approvals, 's2', {
        parkMarkSeen: true,
        retainSeconds: undefined,
      });
      expect((await approvals.pending()).map((pending) => pending.agentId)).toEqual(['s3']);
      expect(await redis.sismember(keys.approvalAgents, 's2')).toBe(0);
      expect(await redis.exists(keys.parked('s2'))).toBe(0);

      // With retention, the agent's keys expire instead of staying.
      await clearFinishedAgent(redis, keys, approvals, 's3', { parkMarkSeen: false, retainSeconds: 60 });
      expect(await approvals.pending()).toEqual([]);
      expect(await redis.pttl(keys.journal('s1'))).toBe(-1);
      await redis.xadd(keys.journal('s3'), '1-0', 'e', 'x');
      await clearFinishedAgent(redis, keys, approvals, 's3', { parkMarkSeen: false, retainSeconds: 60 });
      expect(await redis.pttl(keys.journal('s3'))).toBeGreaterThan(0);

      // A fraction of a second (retainSeconds accepts any non-negative number): PEXPIRE takes
      // whole milliseconds only, and refused 1234.5 ("value is not an integer").
      await redis.xadd(keys.inbox('s4'), '1-0', 'e', 'x');
      await clearFinishedAgent(redis, keys, approvals, 's4', { parkMarkSeen: false, retainSeconds: 1.2345 });
      expect(await redis.pttl(keys.inbox('s4'))).toBeGreaterThan(0);
    });

    it("sends a finished agent's clean-up and the caller's commands in one write", async () => {
      // A worker's connection (auto-pipelined), as the worker ends its agents on.
      const worker = connectRedis(server.url, 'test-worker');
      try {
        const approvals = new RedisApprovals(worker, keys);
        await worker.set('s5-ping', '1');
        const write = vi.spyOn(worker.stream, 'write');
        try {
          await clearFinishedAgent(
            worker,
            keys,
            approvals,
            's5',
            { parkMarkSeen: true, retainSeconds: 60 },
            worker.hset('s5-batch', 's5', '{"outcome":{}}'),
          );
          // One socket write for the DEL of the approval requests, the park mark's DEL, the
          // retention's PEXPIREs and the caller's HSET: an explicit pipeline was a write of its own.
          expect(write).toHaveBeenCalledTimes(1);
        } finally {
          write.mockRestore();
        }
        expect(await worker.hget('s5-batch', 's5')).toBe('{"outcome":{}}');
      } finally {
        await closeRedis(worker);
      }
    });

    it('costs one command to end an agent that neither parked nor asked for approval', async () => {
      const approvals = new RedisApprovals(redis, keys);
      const before = await commandCalls();
      await clearFinishedAgent(redis, keys, approvals, 's4', {
        parkMarkSeen: false,
        retainSeconds: undefined,
      });
      expect((await commandCalls()) - before).toBe(1);
    });
  });

  describe('shared admission', () => {
    it('never lets more requests run than the concurrency limit across two clients', async () => {
      const other = new Redis(server.url, { maxRetriesPerRequest: null });
      const admissions = [new RedisAdmission(redis, keys), new RedisAdmission(other, keys)];
      const limits = { concurrency: 2 };
      let inFlight = 0;
      let peak = 0;
      let done = 0;
      const request = async (admission: RedisAdmission): Promise<void> => {
        const release = await admission.acquire(
          { providerKey: 'limited', limits, estimatedTokens: 10 },
          new AbortController().signal,
        );
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight -= 1;
        done += 1;
        release(undefined);
      };
      await Promise.all(Array.from({ length: 8 }, (_, i) => request(admissions[i % 2] as RedisAdmission)));
      await other.quit();
      expect(done).toBe(8);
      expect(peak).toBeLessThanOrEqual(2);
    });

    it('makes every acquire on a paused key wait, reports the wait, and keeps the longer of two pauses', async () => {
      const admission = new RedisAdmission(redis, keys);
      expect(await admission.pause('paused-key', 300)).toBe(true);
      expect(await admission.pause('paused-key', 10)).toBe(false);
      const waits: number[] = [];
      const release = await admission.acquire(
        {
          providerKey: 'paused-key',
          limits: undefined,
          estimatedTokens: 1,
          onPaused: (ms) => waits.push(ms),
        },
        new AbortController().signal,
      );
      release(undefined);
      expect(waits.length).toBeGreaterThan(0);
      expect(waits[0]).toBeGreaterThan(0);
    });

    it("makes another process's unlimited acquire wait once it hears the pause announced", async () => {
      const subscriber = new Redis(server.url, { maxRetriesPerRequest: null });
      const local = new RedisAdmission(redis, keys);
      const remote = new RedisAdmission(redis, keys);
      const signal = new AbortController().signal;
      // The remote process has used the key before the pause: only the announcement can tell it.
      (await remote.acquire({ providerKey: 'announced', limits: undefined, estimatedTokens: 1 }, signal))(
        undefined,
      );
      const heard = new Promise<void>((resolve) => {
        subscriber.on('message', (_channel: string, message: string) => {
          remote.onAnnouncement(message);
          resolve();
        });
      });
      await subscriber.subscribe(keys.pauseChannel);
      expect(await local.pause('announced', 200)).toBe(true);
      await heard;
      const waits: number[] = [];
      const release = await remote.acquire(
        { providerKey: 'announced', limits: undefined, estimatedTokens: 1, onPaused: (ms) => waits.push(ms) },
        signal,
      );
      release(undefined);
      await subscriber.quit();
      expect(waits.length).toBeGreaterThan(0);
    });

    it('rejects a waiting acquire with the signal reason when it is aborted', async () => {
      const admission = new RedisAdmission(redis, keys);
      await admission.pause('abort-key', 60_000);
      const controller = new AbortController();
      const acquiring = admission.acquire(
        {
          providerKey: 'abort-key',
          limits: undefined,
          estimatedTokens: 1,
          onPaused: () => controller.abort('stop'),
        },
        controller.signal,
      );
      await expect(acquiring).rejects.toBe('stop');
    });
  });

  it("fences with BullMQ's own lock: a running job's lock key holds its worker's token", async () => {
    const queueName = uniqueName('lock');
    const lockKeys = new ScaleoutKeys('test', queueName);
    const connection = { url: server.url, maxRetriesPerRequest: null };
    const queue = new Queue(queueName, { connection, prefix: 'test' });
    let seen: { lock: string | null; token: string | undefined } | undefined;
    const worker = new Worker(
      queueName,
      async (job: Job, token?: string) => {
        seen = { lock: await redis.get(lockKeys.jobLock(job.id ?? '')), token };
        return 'ok';
      },
      { connection, prefix: 'test' },
    );
    const finished = new Promise<void>((resolve) => worker.once('completed', () => resolve()));
    await queue.add('agent', {}, { jobId: 'lock-agent' });
    await finished;
    await worker.close();
    await queue.close();
    expect(seen?.token).toBeTypeOf('string');
    expect(seen?.lock).toBe(seen?.token);
  });
});

describe('scale-out options', () => {
  it('takes the Redis URL from the option, else TROUPE_REDIS_URL, and says what is missing', () => {
    expect(resolveRedisUrl('redis://h:1', {})).toBe('redis://h:1');
    expect(resolveRedisUrl(undefined, { TROUPE_REDIS_URL: 'rediss://h:2' })).toBe('rediss://h:2');
    expect(() => resolveRedisUrl(undefined, {})).toThrow(
      expect.objectContaining({ code: 'missing_redis_url' }),
    );
    expect(() => resolveRedisUrl('http://h', {})).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
  });

  it('validates supervisor options once and fills the defaults', () => {
    const prepared = prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:1' });
    expect(prepared).toMatchObject({
      queueName: 'troupe-agents',
      prefix: 'troupe',
      parkAfterMs: 5000,
      reconcileIntervalMs: 1000,
      retainSeconds: undefined,
    });
    expect(() => prepareRedisOptions({ redisUrl: 'redis://h', queueName: 'a:b' })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
    expect(() => prepareRedisOptions({ redisUrl: 'redis://h', parkAfterMs: -1 })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
    // Past the longest timer delay Node fires at once: a reconcile every millisecond, no wait.
    for (const option of [
      'reconcileIntervalMs',
      'parkAfterMs',
      'connectTimeoutMs',
      'redisDownTimeoutMs',
      'unservedAfterMs',
    ]) {
      expect(() => prepareRedisOptions({ redisUrl: 'redis://h', [option]: 2 ** 31 })).toThrow(
        expect.objectContaining({ code: 'invalid_option', fields: { option } }),
      );
      expect(() => prepareRedisOptions({ redisUrl: 'redis://h', [option]: 2 ** 31 - 1 })).not.toThrow();
    }
  });

  it('refuses agent ids that cannot be job ids and key segments', () => {
    expect(() => checkAgentId('0f8c-agent_1.x')).not.toThrow();
    expect(() => checkAgentId('a:b')).toThrow(expect.objectContaining({ code: 'invalid_agent_id' }));
    expect(() => checkAgentId('')).toThrow(expect.objectContaining({ code: 'invalid_agent_id' }));
  });
});
