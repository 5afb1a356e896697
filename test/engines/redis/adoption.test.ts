/**
 * A parent resumed by a new supervisor on the redis engine: a `spawn_agent` call cut off by the
 * stop gets the child it started, found among the queue's journal streams by the call's id
 * (`childStarts`), so no second child runs. The stop is made exact as in
 * test/supervisor/adoption.test.ts: a finished run's journal streams are cut back to a prefix.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisJournal, readRedisJournal } from '../../../src/engines/redis/stream-journal.ts';
import type { AuditEvent, AuditEventInput, EventOf } from '../../../src/journal/events.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import { fixtures, orchestratorDefinition } from '../../supervisor/helpers.ts';
import {
  killWorkers,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-adoption';
const TASK = 'Split the work between two workers.';

describe(`a parent resumed by a new supervisor on the redis engine${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let redis: Redis;
  let dir: string;
  let workers: TestWorker[] = [];
  const supervisors: RedisSupervisor[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-adoption-'));
  });

  afterEach(async () => {
    for (const supervisor of supervisors.splice(0)) await supervisor.close();
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function start(queueName: string): RedisSupervisor {
    const supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      providers: { adoption: { kind: 'module', module: path.join(fixtures, 'adoption-provider.ts') } },
      defaultProvider: 'adoption',
      compat: false,
      cwd: dir,
    });
    supervisors.push(supervisor);
    return supervisor;
  }

  /** Keeps the events of `agentId`'s stream up to and including the first one `at` accepts. */
  async function cutAfter(queueName: string, agentId: string, at: (event: AuditEvent) => boolean) {
    const key = `${PREFIX}:${queueName}:agent:${agentId}:journal`;
    const events = await readRedisJournal(redis, key);
    const index = events.findIndex(at);
    expect(index).toBeGreaterThanOrEqual(0);
    await redis.del(key);
    const journal = new RedisJournal({ redis, key });
    for (const event of events.slice(0, index + 1)) {
      const { seq: _seq, prev: _prev, hash: _hash, ...body } = event;
      journal.append(body as AuditEventInput);
    }
    await journal.flushed();
  }

  it("records a cut-off spawn_agent whose child exists with that child's id: no second child", async () => {
    const queueName = uniqueName('adoption');
    const worker = await startWorker(server.url, ['--queue', queueName, '--prefix', PREFIX]);
    workers = [worker];
    const definition = await orchestratorDefinition();
    const first = start(queueName);
    const parent = first.spawn(definition, { task: TASK });
    expect(await parent.result).toMatchObject({ status: 'completed' });
    const spawns = (await first.journal(parent.id)).filter(
      (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
    );
    const results = (await first.journal(parent.id)).filter(
      (e): e is EventOf<'ToolResult'> => e.type === 'ToolResult' && e.name === 'spawn_agent',
    );
    const [one, two] = results.map((result) => (result.data as { agentId: string }).agentId);
    const cutOff = spawns[1]?.callId ?? '';
    await first.close();
    // Stopped after the second spawn_agent started its child, before the call's result was written.
    await cutAfter(queueName, parent.id, (e) => e.type === 'ToolCall' && e.callId === cutOff);
    await cutAfter(queueName, two ?? '', (e) => e.type === 'Started');
    // Their finished jobs go too: a job kept under the agent's id would hand back its old outcome.
    const queue = new Queue(queueName, { connection: { url: server.url }, prefix: PREFIX });
    for (const id of [parent.id, two ?? '']) await (await queue.getJob(id))?.remove();
    await queue.close();

    const second = start(queueName);
    const outcome = await second.spawn(definition, { id: parent.id, task: TASK, resume: true }).result;

    // Without childStarts the call came back interrupted and the model spawned a third worker.
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${one}:completed`, `${two}:completed`].sort() },
    });
    const events = await second.journal(parent.id);
    expect(events.find((e) => e.type === 'ToolResult' && e.callId === cutOff)).toMatchObject({
      ok: true,
      data: { agentId: two },
    });
    expect(events.filter((e) => e.type === 'ToolCall' && e.name === 'spawn_agent')).toHaveLength(2);
  });

  it("ends an unfinished child no spawn_agent result names (a program's spawn with parent), as on threads", async () => {
    const queueName = uniqueName('adoption');
    const worker = await startWorker(server.url, ['--queue', queueName, '--prefix', PREFIX]);
    workers = [worker];
    const definition = await orchestratorDefinition();
    const first = start(queueName);
    const parent = first.spawn(definition, { task: TASK });
    expect(await parent.result).toMatchObject({ status: 'completed' });
    const results = (await first.journal(parent.id)).filter(
      (e): e is EventOf<'ToolResult'> => e.type === 'ToolResult' && e.name === 'spawn_agent',
    );
    const two = (results[1]?.data as { agentId: string } | undefined)?.agentId ?? '';
    const started = (await first.journal(two)).find((e): e is EventOf<'Started'> => e.type === 'Started');
    await first.close();
    // A child the program spawned with `parent`, killed after it started: its stream never ended.
    const stray = `${parent.id}-stray`;
    const journal = new RedisJournal({ redis, key: `${PREFIX}:${queueName}:agent:${stray}:journal` });
    const { seq: _seq, prev: _prev, hash: _hash, ...body } = started as EventOf<'Started'>;
    journal.append({ ...body, agentId: stray, parentId: parent.id } as AuditEventInput);
    await journal.flushed();
    // The parent's finished job goes: a job kept under its id would hand back its old outcome.
    const queue = new Queue(queueName, { connection: { url: server.url }, prefix: PREFIX });
    await (await queue.getJob(parent.id))?.remove();
    await queue.close();

    const second = start(queueName);
    const failed: string[] = [];
    second.on('agent:failed', (event) => failed.push(event.agentId));
    const outcome = await second.spawn(definition, { id: parent.id, task: TASK, resume: true }).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    // Without the fix the search ran on redis only for a cut-off spawn_agent: this stream stayed open.
    const events = await readRedisJournal(redis, `${PREFIX}:${queueName}:agent:${stray}:journal`);
    expect(events.filter((e) => e.type === 'Completed' || e.type === 'Failed')).toMatchObject([
      { type: 'Failed', reason: 'cancelled', error: { fields: { parentId: parent.id } } },
    ]);
    expect(failed).toEqual([stray]);
  });
});
