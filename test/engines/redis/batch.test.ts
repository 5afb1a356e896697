/**
 * Batch jobs: the agents a supervisor runs in one event-loop turn travel as one BullMQ job, and
 * each agent keeps what a job of its own gave it: the journal fenced by the (batch) job's lock,
 * resumption after its worker dies without running finished agents again, parking without holding
 * the batch, instructions and decisions that find a parked agent by its id, cancels, retries that
 * leave finished siblings alone, and retention.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { RemoteApprovals } from '../../../src/engines/redis/remote-approvals.ts';
import { RedisWorker } from '../../../src/engines/redis/worker.ts';
import type { AgentRestarted, AgentStarted } from '../../../src/supervisor/events.ts';
import { RedisSupervisor, type RedisSupervisorOptions } from '../../../src/supervisor/redis-supervisor.ts';
import { planTask } from '../../fixtures/approvals/plan-provider.ts';
import {
  chainProblem,
  definition,
  killWorkers,
  nextEvent,
  recordedSteps,
  recordToolModule,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  stepperProvider,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-batch';
/** Short locks, so a SIGKILLed worker's batch is taken over quickly. */
const TIMING = ['--lock-duration-ms', '1500', '--stalled-interval-ms', '500'];
const stepper = definition('stepper', { tools: ['record_step', 'complete_task'] });
const slow = definition('slow', { tools: ['record_step', 'complete_task'] });
const waiter = definition('waiter', { tools: ['wait_for_instruction'] });

describe(`batch jobs on the redis backend${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;
  let dir: string;
  let workers: TestWorker[] = [];
  const inProcess: RedisWorker[] = [];
  const supervisors: RedisSupervisor[] = [];
  const queues: Queue[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-batch-'));
  });

  afterEach(async () => {
    await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.close()));
    await Promise.all(inProcess.splice(0).map((worker) => worker.close(true)));
    await Promise.all(queues.splice(0).map((queue) => queue.close()));
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A queue of its own: a supervisor on it, its keys, and a BullMQ handle on it. */
  function setUp(label: string, options: Partial<RedisSupervisorOptions> = {}) {
    const queueName = uniqueName(label);
    const recordFile = path.join(dir, `${queueName}.tsv`);
    const supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      providers: { stepper: stepperProvider(2), slow: stepperProvider(6, 150) },
      definitions: [stepper, slow],
      toolModules: [{ module: recordToolModule }],
      compat: false,
      cwd: dir,
      ...options,
    });
    supervisors.push(supervisor);
    const queue = new Queue(queueName, {
      connection: { url: server.url, maxRetriesPerRequest: null },
      prefix: PREFIX,
    });
    queues.push(queue);
    const args = ['--queue', queueName, '--prefix', PREFIX];
    const worker = async (
      extra: readonly string[] = [],
      env: Record<string, string> = {},
    ): Promise<TestWorker> => {
      const started = await startWorker(server.url, [...args, ...extra], {
        TROUPE_SCALEOUT_RECORD: recordFile,
        ...env,
      });
      workers.push(started);
      return started;
    };
    const keys = new ScaleoutKeys(PREFIX, queueName);
    return { supervisor, queue, queueName, recordFile, keys, worker };
  }

  async function finishedJobs(queue: Queue): Promise<string[]> {
    const jobs = await queue.getJobs(['completed', 'failed']);
    return jobs.map((job) => job.name).sort();
  }

  it('adds the agents run in one turn as batch jobs of at most maxBatchSize, and stores every outcome in the batch', async () => {
    const { supervisor, queue, keys, worker } = setUp('one-job', { maxBatchSize: 4 });
    await worker(['--concurrency', '20']);
    const results = await supervisor
      .fanOut(Array.from({ length: 9 }, (_, index) => ({ agent: 'stepper', task: `Stepper ${index}.` })))
      .all();

    expect(results.map((result) => result.outcome.status)).toEqual(Array(9).fill('completed'));
    // 9 agents, at most 4 a batch: three batches of 3, and no job of any agent's own. (An agent's
    // end signal may reach the supervisor before its batch job is marked completed.)
    await vi.waitFor(async () => expect(await finishedJobs(queue)).toEqual(['agents', 'agents', 'agents']), {
      interval: 20,
    });
    const jobs = await queue.getJobs(['completed', 'failed']);
    expect(jobs.map((job) => [job.name, (job.data as { agents: unknown[] }).agents.length])).toEqual([
      ['agents', 3],
      ['agents', 3],
      ['agents', 3],
    ]);
    for (const { agentId } of results) expect(await Job.fromId(queue, agentId)).toBeUndefined();
    for (const job of jobs) {
      const entries = await redis.hgetall(keys.batch(job.id ?? ''));
      expect(Object.values(entries).map((entry) => JSON.parse(entry).outcome.status)).toEqual(
        Array(3).fill('completed'),
      );
    }
    // A lone agent is a job of its own, as before batches.
    const lone = await supervisor.spawn('stepper', { task: 'Alone.' }).result;
    expect(lone.status).toBe('completed');
    expect(await finishedJobs(queue)).toEqual(['agent', 'agents', 'agents', 'agents']);
  });

  it("runs no more agents at once than the worker's concurrency: a batch it has no room for waits for one that has", async () => {
    const { supervisor, queue, worker } = setUp('room', { maxBatchSize: 2 });
    await worker(['--concurrency', '2']);
    let running = 0;
    let most = 0;
    supervisor.on('agent:started', () => {
      running += 1;
      most = Math.max(most, running);
    });
    supervisor.on('agent:completed', () => {
      running -= 1;
    });
    const handles = [0, 1, 2, 3].map((index) =>
      supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
    );
    for (const handle of handles) expect(await handle.result).toMatchObject({ status: 'completed' });

    expect(most).toBe(2);
    // Both batch jobs ran, the second after a slot of the first had freed. When only one slot was
    // free as the worker took the second (the first batch's agents end a moment apart, and a freed
    // slot wakes the worker's fetch), it ran one agent and handed the other off to a job of its
    // own (docs/scaleout.md, "Batches"): which one happens is timing, the bound above is not.
    await vi.waitFor(
      async () => {
        const jobs = await finishedJobs(queue);
        expect(jobs.filter((name) => name === 'agents')).toHaveLength(2);
        expect(jobs.filter((name) => name !== 'agents').length).toBeLessThanOrEqual(1);
        expect(jobs.filter((name) => name !== 'agents').every((name) => name === 'agent')).toBe(true);
      },
      { interval: 20 },
    );
  });

  it("resumes a SIGKILLed worker's batch on another worker: only its unfinished agents run again, and every outcome arrives", async () => {
    const { supervisor, queue, recordFile, worker } = setUp('crash');
    // The doomed worker's third record_step never returns: slow agents hang there, stepper agents
    // (two steps) finish.
    const doomed = await worker(['--concurrency', '10', ...TIMING], { TROUPE_SCALEOUT_HANG_AT: '3' });
    const hostOf = new Map<string, number>();
    supervisor.on('agent:started', (event: AgentStarted) => hostOf.set(event.agentId, event.hostId));
    const restarted: AgentRestarted[] = [];
    supervisor.on('agent:restarted', (event) => restarted.push(event));
    const fast = [0, 1].map((index) => supervisor.spawn('stepper', { task: `Fast ${index}.` }));
    const hanging = [0, 1].map((index) =>
      supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
    );
    const fastOutcomes = await Promise.all(fast.map((handle) => handle.result));
    await vi.waitFor(
      () => {
        const hung = recordedSteps(recordFile).filter(
          ([, note, pid]) => note === 'step 3' && pid === String(doomed.pid),
        );
        expect(hung).toHaveLength(2);
      },
      { timeout: 20_000, interval: 50 },
    );
    doomed.kill('SIGKILL');
    await doomed.exited;
    const survivor = await worker(['--concurrency', '10', ...TIMING]);
    const slowOutcomes = await Promise.all(hanging.map((handle) => handle.result));

    expect([...fastOutcomes, ...slowOutcomes].map((outcome) => outcome.status)).toEqual(
      Array(4).fill('completed'),
    );
    // One batch, taken over: no agent became a job of its own.
    await vi.waitFor(async () => expect(await finishedJobs(queue)).toEqual(['agents']), { interval: 20 });
    const steps = recordedSteps(recordFile);
    for (const handle of fast) {
      // Finished on the doomed worker, never run again.
      expect(steps.filter(([id]) => id === handle.id).map(([, note, pid]) => [note, pid])).toEqual([
        ['step 1', String(doomed.pid)],
        ['step 2', String(doomed.pid)],
      ]);
      expect(hostOf.get(handle.id)).toBe(doomed.ids[0]);
    }
    for (const handle of hanging) {
      expect(hostOf.get(handle.id)).toBe(survivor.ids[0]);
      const notes = steps.filter(([id]) => id === handle.id).map(([, note]) => note);
      // The hung step 3 is settled as interrupted, never run again; the others ran once each.
      expect(notes).toEqual(['step 1', 'step 2', 'step 3', 'step 4', 'step 5', 'step 6']);
      expect(chainProblem(await supervisor.journal(handle.id))).toBeUndefined();
    }
    expect(restarted.map((event) => event.agentId).sort()).toEqual(hanging.map((handle) => handle.id).sort());
  });

  it('fences every agent of a batch with the batch lock: a worker that lost it writes no journal and hands nothing off', async () => {
    const { supervisor, queue, keys, queueName } = setUp('fence');
    const worker = await RedisWorker.start({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      concurrency: 10,
    });
    inProcess.push(worker);
    const handles = [0, 1].map((index) =>
      supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
    );
    await Promise.all(
      handles.map((handle) => nextEvent(supervisor, 'agent:tool', (event) => event.agentId === handle.id)),
    );
    const [batch] = await queue.getJobs(['active']);
    expect(batch?.name).toBe('agents');
    // Another worker "took the batch over".
    await redis.set(keys.jobLock(batch?.id ?? ''), 'token-of-the-new-owner');
    const before = await Promise.all(handles.map((handle) => redis.xlen(keys.journal(handle.id))));
    await vi.waitFor(() => expect(worker.runningAgents).toBe(0), { timeout: 20_000, interval: 50 });

    expect(await Promise.all(handles.map((handle) => redis.xlen(keys.journal(handle.id))))).toEqual(before);
    expect(await redis.hgetall(keys.batch(batch?.id ?? ''))).toEqual({});
    for (const handle of handles) expect(await Job.fromId(queue, handle.id)).toBeUndefined();
  });

  it('writes no outcome into the batch hash once its lock is lost, and stops the batch’s other agents', async () => {
    // `slow` is still in its (abortable) model request when `stepper` ends.
    const { supervisor, keys, queueName } = setUp('fence-hash', {
      providers: { stepper: stepperProvider(1), slow: stepperProvider(1, 600_000) },
    });
    const worker = await RedisWorker.start({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      concurrency: 10,
    });
    inProcess.push(worker);
    // Loses the batch's lock (as to a worker that took it over) just before the worker writes its
    // first outcome into the batch's hash: after the journal took the agent's end under the lock.
    // The worker runs in this process: its commands go through ioredis's prototype.
    const batchPrefix = keys.batch('');
    let lostBatch: string | undefined;
    let write: Promise<unknown> | undefined;
    const proto = Redis.prototype as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const names = ['hset', 'eval', 'evalsha'] as const;
    // Inherited (ioredis defines commands on a base class): deleted again at the end.
    expect(names.filter((name) => Object.hasOwn(proto, name))).toEqual([]);
    const originals = names.map((name) => proto[name]);
    for (const [index, name] of names.entries()) {
      const original = originals[index] as (...args: unknown[]) => Promise<unknown>;
      proto[name] = async function (this: Redis, ...args: unknown[]): Promise<unknown> {
        const key = args.find((arg) => typeof arg === 'string' && arg.startsWith(batchPrefix)) as
          | string
          | undefined;
        const writesOutcome = args.some((arg) => typeof arg === 'string' && arg.startsWith('{"outcome"'));
        if (key !== undefined && writesOutcome && lostBatch === undefined) {
          lostBatch = key.slice(batchPrefix.length);
          await redis.set(keys.jobLock(lostBatch), 'token-of-the-new-owner');
          write = original.apply(this, args);
          return write;
        }
        return original.apply(this, args);
      };
    }
    try {
      const done = supervisor.spawn('stepper', { task: 'Finishes.' });
      const long = supervisor.spawn('slow', { task: 'Takes ten minutes.', provider: 'slow' });
      await vi.waitFor(() => expect(write).toBeDefined(), { timeout: 20_000, interval: 20 });
      await write;
      expect(await redis.hgetall(keys.batch(lostBatch ?? ''))).toEqual({});
      // Stopped: the other agent is aborted, not left to run on for ten minutes.
      await vi.waitFor(() => expect(worker.runningAgents).toBe(0), { timeout: 10_000, interval: 20 });
      // Its end stays in its journal, taken under the lock: the batch's new owner reports it. The
      // other's abort was refused by the journal's fence.
      expect((await supervisor.journal(done.id)).at(-1)).toMatchObject({ type: 'Completed' });
      expect((await supervisor.journal(long.id)).at(-1)?.type).toBe('InferenceSubmitted');
    } finally {
      for (const name of names) delete proto[name];
    }
  });

  it('stops the runs of a job, batch or lone, once BullMQ cannot renew its lock, not at their next write', async () => {
    for (const { label, count, maxBatchSize } of [
      { label: 'renew-batch', count: 2, maxBatchSize: 32 },
      { label: 'renew-lone', count: 1, maxBatchSize: 1 },
    ]) {
      // Each agent is in a ten-minute (abortable) model request, which writes nothing until it ends.
      const { supervisor, queue, keys, queueName } = setUp(label, {
        providers: { slow: stepperProvider(1, 600_000) },
        maxBatchSize,
      });
      const worker = await RedisWorker.start({
        redisUrl: server.url,
        queueName,
        prefix: PREFIX,
        concurrency: 10,
        lockDurationMs: 1_000,
      });
      inProcess.push(worker);
      const handles = Array.from({ length: count }, (_, index) =>
        supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
      );
      // In their model requests: what they journalled before is in Redis.
      for (const handle of handles) {
        await vi.waitFor(
          async () =>
            expect((await supervisor.journal(handle.id)).map((event) => event.type)).toContain(
              'InferenceSubmitted',
            ),
          { timeout: 20_000, interval: 20 },
        );
      }
      const [job] = await queue.getJobs(['active']);
      // Another worker "took the job over".
      await redis.set(keys.jobLock(job?.id ?? ''), 'token-of-the-new-owner');
      await vi.waitFor(() => expect(worker.runningAgents).toBe(0), { timeout: 10_000, interval: 20 });
      // Aborted: their ends were refused by the journal's fence (the new owner runs them).
      for (const handle of handles) {
        const types = (await supervisor.journal(handle.id)).map((event) => event.type);
        expect(types.filter((type) => type === 'Failed' || type === 'Completed')).toEqual([]);
      }
    }
  });

  it('takes new work while a batch still runs one agent: the slots of its ended agents are used again', async () => {
    const { supervisor, worker } = setUp('refill', {
      providers: { stepper: stepperProvider(2), simulated: { kind: 'simulated', options: { waits: 1 } } },
      definitions: [stepper, waiter],
      maxBatchSize: 2,
      // The waiter keeps its slot in the batch (it would leave it if it parked).
      parkAfterMs: 600_000,
    });
    await worker(['--concurrency', '2']);
    // One batch fills the worker: an agent that waits for an instruction, and one that ends at once.
    const held = supervisor.spawn('waiter', { task: 'Wait.', provider: 'simulated' });
    const quick = supervisor.spawn('stepper', { task: 'Step.', provider: 'stepper' });
    await nextEvent(supervisor, 'agent:started', (event) => event.agentId === held.id);
    expect(await quick.result).toMatchObject({ status: 'completed' });
    // A lone agent, a job of its own: the worker has a free slot, but its one job (the batch) runs
    // on. It must take the job now; the waiter is only instructed once this agent has ended.
    const later = supervisor.spawn('stepper', { task: 'Later.', provider: 'stepper' });
    expect(await later.result).toMatchObject({ status: 'completed' });
    await supervisor.instruct(held.id, 'go on');
    expect(await held.result).toMatchObject({ status: 'completed' });
  });

  it('hands a parked agent off to a job of its own, found by its id: instructions and remote decisions wake it', async () => {
    const { supervisor, queue, queueName, worker } = setUp('park', {
      providers: {
        simulated: { kind: 'simulated', options: { waits: 1 } },
        plan: { kind: 'module', module: path.join(repoRoot, 'test/fixtures/approvals/plan-provider.ts') },
      },
      definitions: [
        waiter,
        definition('asker', { permissions: { allow: [], ask: ['record_action'], deny: [] } }),
      ],
      toolModules: [{ module: path.join(repoRoot, 'test/fixtures/approvals/tools.ts') }],
      approvals: { unattended: 'wait' },
      parkAfterMs: 100,
    });
    await worker(['--concurrency', '10']);
    const waiters = [0, 1].map((index) => supervisor.spawn('waiter', { task: `Wait ${index}.` }));
    const asker = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'gated' } }]),
      provider: 'plan',
    });
    await Promise.all(
      [...waiters, asker].map((handle) =>
        nextEvent(supervisor, 'agent:parked', (event) => event.agentId === handle.id),
      ),
    );
    // The batch is done with them: each waits in a job of its own, in the delayed set.
    await vi.waitFor(async () => expect(await finishedJobs(queue)).toEqual(['agents']), { interval: 50 });
    for (const handle of [...waiters, asker]) {
      expect(await (await Job.fromId(queue, handle.id))?.getState()).toBe('delayed');
    }
    for (const handle of waiters) await supervisor.instruct(handle.id, `go on, ${handle.id}`);
    const remote = await RemoteApprovals.connect({ redisUrl: server.url, queueName, prefix: PREFIX });
    try {
      const [request] = await remote.pending();
      await remote.decide(request?.requestId ?? '', { approved: true, by: 'person', decider: 'test' });
    } finally {
      await remote.close();
    }

    const outcomes = await Promise.all([...waiters, asker].map((handle) => handle.result));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['completed', 'completed', 'completed']);
    for (const handle of waiters) {
      const journal = await supervisor.journal(handle.id);
      expect(journal.filter((event) => event.type === 'Instructed')).toMatchObject([
        { index: 0, text: `go on, ${handle.id}` },
      ]);
    }
  });

  it('cancels an agent of a running batch, one whose flag was set before the batch started, and one no worker took', async () => {
    const running = setUp('cancel-running');
    await running.worker(['--concurrency', '10']);
    const [doomed, sibling] = [0, 1].map((index) =>
      running.supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
    );
    await nextEvent(running.supervisor, 'agent:tool', (event) => event.agentId === doomed?.id);
    doomed?.cancel('not needed');
    expect(await doomed?.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(await sibling?.result).toMatchObject({ status: 'completed' });

    // Cancelled while no worker runs: the worker that takes the batch reads the flag at once.
    const early = setUp('cancel-early', { graceMs: 60_000 });
    const [flagged, other] = [0, 1].map((index) =>
      early.supervisor.spawn('stepper', { task: `Step ${index}.` }),
    );
    await vi.waitFor(async () => expect(await early.queue.getWaitingCount()).toBe(1), { interval: 20 });
    flagged?.cancel('before any worker');
    await early.worker(['--concurrency', '10']);
    expect(await flagged?.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(await other?.result).toMatchObject({ status: 'completed' });
    // Ended by the worker (its journal says so), not only settled by the supervisor.
    expect((await early.supervisor.journal(flagged?.id ?? '')).at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'cancelled',
    });
    expect(recordedSteps(early.recordFile).filter(([id]) => id === flagged?.id)).toEqual([]);

    // No worker at all: close() settles both, and the batch job is removed.
    const unserved = setUp('cancel-unserved', { graceMs: 100 });
    const handles = [0, 1].map((index) => unserved.supervisor.spawn('stepper', { task: `Step ${index}.` }));
    await vi.waitFor(async () => expect(await unserved.queue.getWaitingCount()).toBe(1), { interval: 20 });
    await unserved.supervisor.close();
    for (const handle of handles)
      expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
    await vi.waitFor(async () => expect(await unserved.queue.getWaitingCount()).toBe(0), { interval: 20 });
  });

  it('removes a batch job whose agents were all cancelled while it was being added', async () => {
    const adding = setUp('cancel-adding', { graceMs: 60_000 });
    await adding.supervisor.start();
    // Redis holds every write for a while: the batch job's addition is sent and not yet answered
    // when the agents are cancelled, so the supervisor settles them at once.
    const admin = new Redis(server.url);
    try {
      await admin.client('PAUSE', 30_000, 'WRITE');
      const handles = [0, 1].map((index) => adding.supervisor.spawn('stepper', { task: `Step ${index}.` }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const handle of handles) handle.cancel('while adding');
      for (const handle of handles)
        expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
      await admin.client('UNPAUSE');
      // close() waits for the addition's follow-up: the flags, then the job's removal.
      await adding.supervisor.close();
      expect(await adding.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).toEqual({
        waiting: 0,
        active: 0,
        delayed: 0,
        prioritized: 0,
      });
      expect(await adding.queue.getJobs(['completed', 'failed'])).toEqual([]);
    } finally {
      await admin.client('UNPAUSE');
      admin.disconnect();
    }
  });

  it('removes a batch, and its hash, whose agents were all cancelled while it was being added, with retainSeconds 0', async () => {
    const { supervisor, queue, keys } = setUp('cancel-adding-zero', {
      graceMs: 60_000,
      retainSeconds: 0,
      reconcileIntervalMs: 100,
    });
    await supervisor.start();
    const admin = new Redis(server.url);
    const other = new Redis(server.url);
    try {
      await admin.client('PAUSE', 30_000, 'WRITE');
      const handles = [0, 1].map((index) => supervisor.spawn('stepper', { task: `Step ${index}.` }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const handle of handles) handle.cancel('while adding');
      for (const handle of handles)
        expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
      // Runs right after the batch's addition, before the supervisor's follow-up: as a worker that
      // took the batch at once would, it holds the job's lock (for 500 ms) and writes an outcome
      // to the batch's hash.
      const held = other.eval(
        `local jobs = redis.call('KEYS', ARGV[1] .. 'batch~*')
for _, key in ipairs(jobs) do
  if not string.find(key, ':', string.len(ARGV[1]) + 1, true) then
    local id = string.sub(key, string.len(ARGV[1]) + 1)
    redis.call('SET', key .. ':lock', 'a-worker', 'PX', 500)
    redis.call('HSET', ARGV[1] .. 'batch:' .. id, ARGV[2], '{}')
    return id
  end
end
return false`,
        0,
        `${PREFIX}:${queue.name}:`,
        handles[0]?.id ?? '',
      ) as Promise<string | null>;
      await admin.client('UNPAUSE');
      const batchId = (await held) ?? '';
      expect(batchId).toMatch(/^batch~/);
      // Its removal was refused while the lock held; tried again at the next reconcile ticks.
      await vi.waitFor(
        async () => {
          expect(await redis.exists(keys.job(batchId))).toBe(0);
          expect(await redis.exists(keys.batch(batchId))).toBe(0);
        },
        { interval: 20, timeout: 5_000 },
      );
    } finally {
      await admin.client('UNPAUSE');
      admin.disconnect();
      other.disconnect();
    }
  });

  it('retries a run that failed in a job of its own, and leaves its finished sibling alone', async () => {
    const { supervisor, queue, keys, recordFile, worker } = setUp('retry', {
      restart: { maxRetries: 1, baseDelayMs: 10 },
    });
    await worker(['--concurrency', '10']);
    const done = supervisor.spawn('stepper', { task: 'Finishes.' });
    const broken = supervisor.spawn('slow', { task: 'Its journal breaks.', provider: 'slow' });
    // Listened for in the turn of the spawn: workers send per-request events only then.
    const calling = nextEvent(supervisor, 'agent:tool', (event) => event.agentId === broken.id);
    expect(await done.result).toMatchObject({ status: 'completed' });
    await calling;
    // An entry no worker wrote, past the end of the journal: every later append is refused, and
    // so is every read.
    await redis.xadd(keys.journal(broken.id), '1000000-0', 'e', 'not an event');
    const outcome = await broken.result;

    expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'job_failed' } });
    // Its retry ran in a job of its own (and failed again: the journal stays broken).
    const own = await Job.fromId(queue, broken.id);
    expect(own?.name).toBe('agent');
    expect(await own?.getState()).toBe('failed');
    // The finished sibling did not run again.
    expect(recordedSteps(recordFile).filter(([id]) => id === done.id)).toHaveLength(2);
    expect(await Job.fromId(queue, done.id)).toBeUndefined();
  });

  it('keeps the batch hash and the agents’ keys retainSeconds after the batch', async () => {
    const { supervisor, queue, keys, worker } = setUp('retain', { retainSeconds: 600 });
    await worker(['--concurrency', '10']);
    const handles = [0, 1].map((index) => supervisor.spawn('stepper', { task: `Step ${index}.` }));
    for (const handle of handles) expect(await handle.result).toMatchObject({ status: 'completed' });
    await vi.waitFor(async () => expect(await finishedJobs(queue)).toEqual(['agents']), { interval: 20 });
    const [batch] = await queue.getJobs(['completed']);
    const ttl = await redis.pttl(keys.batch(batch?.id ?? ''));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600_000);
    for (const handle of handles) expect(await redis.pttl(keys.journal(handle.id))).toBeGreaterThan(0);
    // The batch job itself (its data holds the tasks) expires too, even with no later job to end:
    // BullMQ removes a job past its age only when another one finishes.
    await vi.waitFor(async () => expect(await redis.pttl(keys.job(batch?.id ?? ''))).toBeGreaterThan(0), {
      interval: 20,
    });
    expect(await redis.pttl(keys.job(batch?.id ?? ''))).toBeLessThanOrEqual(600_000);
  });

  /**
   * A batch whose worker is SIGKILLed while one agent hangs and another has ended, with
   * `--max-stalled 0`: the next worker's stalled check fails the batch in BullMQ's own script (no
   * worker `failed` event, no failure signal). Resolves with both outcomes and the batch's id.
   */
  async function stalledOut(fixture: ReturnType<typeof setUp>) {
    const { supervisor, queue, recordFile, worker } = fixture;
    const stalled = ['--max-stalled', '0', ...TIMING];
    const doomed = await worker(['--concurrency', '10', ...stalled], { TROUPE_SCALEOUT_HANG_AT: '3' });
    const done = supervisor.spawn('stepper', { task: 'Finishes.' });
    const hung = supervisor.spawn('slow', { task: 'Hangs.', provider: 'slow' });
    await vi.waitFor(async () => expect(await queue.getJobs(['active'])).toHaveLength(1), { interval: 20 });
    const [batch] = await queue.getJobs(['active']);
    expect(await done.result).toMatchObject({ status: 'completed' });
    await vi.waitFor(
      () =>
        expect(
          recordedSteps(recordFile).filter(([id, note]) => id === hung.id && note === 'step 3'),
        ).toHaveLength(1),
      { timeout: 20_000, interval: 50 },
    );
    doomed.kill('SIGKILL');
    await doomed.exited;
    await worker(stalled);
    return { hung: await hung.result, batchId: batch?.id ?? '' };
  }

  it('expires a batch that failed at its stalled limit retainSeconds after, its hash included', async () => {
    const fixture = setUp('retain-stalled', { retainSeconds: 600 });
    const { hung, batchId } = await stalledOut(fixture);
    expect(hung).toMatchObject({ status: 'failed', error: { code: 'job_failed' } });
    // No worker ended the batch: its supervisor set the TTL as it settled the batch's last agent.
    await vi.waitFor(async () => expect(await redis.pttl(fixture.keys.batch(batchId))).toBeGreaterThan(0), {
      interval: 20,
    });
    expect(await redis.pttl(fixture.keys.batch(batchId))).toBeLessThanOrEqual(600_000);
    expect(await redis.pttl(fixture.keys.job(batchId))).toBeGreaterThan(0);
  });

  it('ends the unfinished agent of a batch that failed at its stalled limit job_failed with retainSeconds 0', async () => {
    const fixture = setUp('retain-zero-stalled', { retainSeconds: 0 });
    const { hung, batchId } = await stalledOut(fixture);
    // BullMQ's reason, not job_lost: the batch job outlived the script that failed it.
    expect(hung).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'job_failed', message: expect.stringContaining('stalled') },
    });
    // Then its supervisor, having read every agent, removed the batch and its hash.
    await vi.waitFor(async () => expect(await redis.exists(fixture.keys.job(batchId))).toBe(0), {
      interval: 20,
    });
    expect(await redis.exists(fixture.keys.batch(batchId))).toBe(0);
  });

  it('expires a lone agent job, with its unmasked outcome, retainSeconds after it completes', async () => {
    const { supervisor, keys, worker } = setUp('retain-job', { retainSeconds: 600, maxBatchSize: 1 });
    await worker();
    const handle = supervisor.spawn('stepper', { task: 'Step.' });
    expect(await handle.result).toMatchObject({ status: 'completed' });
    expect(await redis.hget(keys.job(handle.id), 'returnvalue')).toContain('"status":"completed"');
    await vi.waitFor(async () => expect(await redis.pttl(keys.job(handle.id))).toBeGreaterThan(0), {
      interval: 20,
    });
    expect(await redis.pttl(keys.job(handle.id))).toBeLessThanOrEqual(600_000);
  });

  it('removes a batch whose agents were cancelled with retainSeconds 0 once read, though its supervisor closes at once', async () => {
    const { supervisor, queue, keys, worker } = setUp('retain-zero-cancel', { retainSeconds: 0 });
    await worker(['--concurrency', '10']);
    const handles = [0, 1].map((index) =>
      supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
    );
    await nextEvent(supervisor, 'agent:tool', (event) => event.agentId === handles[0]?.id);
    const [batch] = await queue.getJobs(['active']);
    const batchId = batch?.id ?? '';
    for (const handle of handles) handle.cancel('not needed');
    for (const handle of handles)
      expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
    // The last agent's end is read before its worker has finished the batch job, which refuses its
    // removal then: close() does not leave the batch and its hash (the agents' outcomes) for 24 h.
    await supervisor.close();
    expect(await redis.exists(keys.job(batchId))).toBe(0);
    expect(await redis.exists(keys.batch(batchId))).toBe(0);
  });

  it('removes a batch its worker held past close() with retainSeconds 0 as the worker ends it', async () => {
    const { supervisor, queue, keys, worker } = setUp('retain-zero-held', { retainSeconds: 0, graceMs: 100 });
    const held = await worker(['--concurrency', '10']);
    const handles = [0, 1].map((index) =>
      supervisor.spawn('slow', { task: `Slow ${index}.`, provider: 'slow' }),
    );
    await nextEvent(supervisor, 'agent:tool', (event) => event.agentId === handles[0]?.id);
    const [batch] = await queue.getJobs(['active']);
    const batchId = batch?.id ?? '';
    // The worker stalls (well within its lock): it ends nothing within graceMs, nor within the 2 s
    // close() waits to remove the batch once it has settled (and so read) every agent.
    held.kill('SIGSTOP');
    try {
      await supervisor.close();
      for (const handle of handles)
        expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
      expect(await redis.exists(keys.job(batchId))).toBe(1);
    } finally {
      held.kill('SIGCONT');
    }
    // It wakes, ends its agents (cancelled) and then the batch, which its supervisor had read: the
    // job and its hash (the agents' outcomes) go then, not 24 h later.
    await vi.waitFor(
      async () => {
        expect(await redis.exists(keys.job(batchId))).toBe(0);
        expect(await redis.exists(keys.batch(batchId))).toBe(0);
      },
      { timeout: 20_000, interval: 50 },
    );
  });

  it('delivers a lone agent’s outcome with retainSeconds 0, then deletes its job', async () => {
    const { supervisor, keys, worker } = setUp('retain-zero', { retainSeconds: 0, maxBatchSize: 1 });
    await worker();
    // One after the other: each agent's job is finished before the supervisor reads it.
    for (const task of ['Step one.', 'Step two.']) {
      const handle = supervisor.spawn('stepper', { task });
      expect(await handle.result).toMatchObject({ status: 'completed' });
      await vi.waitFor(async () => expect(await redis.exists(keys.job(handle.id))).toBe(0), { interval: 20 });
      expect(await redis.exists(keys.journal(handle.id))).toBe(0);
      // Its entry in the queue's registry of journals went with it.
      expect(await redis.zscore(keys.journals, handle.id)).toBeNull();
    }
  });

  it('reads which agents of a batch ended when it takes the batch, not their outcomes', async () => {
    const { supervisor, queue, keys, worker } = setUp('states');
    const ended = supervisor.spawn('stepper', { task: 'Ended before.' });
    const running = supervisor.spawn('stepper', { task: 'Runs.' });
    await vi.waitFor(async () => expect(await queue.getJobs(['waiting'])).toHaveLength(1), { interval: 20 });
    const [batch] = await queue.getJobs(['waiting']);
    // As a worker that died after the agent ended left it: its outcome, large, in the batch's hash.
    const outcome = {
      status: 'completed',
      agentId: ended.id,
      answer: 'done',
      result: 'x'.repeat(8_000_000),
      usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: null,
      rounds: 1,
    };
    await redis.hset(keys.batch(batch?.id ?? ''), ended.id, JSON.stringify({ outcome }));
    const sent = async (): Promise<number> =>
      Number(/^total_net_output_bytes:(\d+)/m.exec(await redis.info('stats'))?.[1] ?? 0);
    const before = await sent();
    await worker();
    expect(await ended.result).toMatchObject({ status: 'completed', result: 'x'.repeat(8_000_000) });
    expect(await running.result).toMatchObject({ status: 'completed' });
    // The worker registered the journal it created (what a resume's search reads, not a SCAN).
    expect(await redis.zscore(keys.journals, running.id)).not.toBeNull();
    // The supervisor read the outcome once; the worker that took the batch read none of it (an
    // HGETALL of the hash sent it a second time).
    expect((await sent()) - before).toBeLessThan(12_000_000);
  });

  /** Bytes the server has sent so far. */
  async function sentBytes(): Promise<number> {
    return Number(/^total_net_output_bytes:(\d+)/m.exec(await redis.info('stats'))?.[1] ?? 0);
  }

  /** A stored value one byte over MAX_OUTCOME_BYTES (64 MiB), as another program could write. */
  const oversize = 'x'.repeat(64 * 1024 * 1024 + 1);

  it('fails an agent whose field of its batch is larger than an outcome, unread', {
    timeout: 30_000,
  }, async () => {
    const { supervisor, queue, keys, worker } = setUp('oversize-field');
    const ended = supervisor.spawn('stepper', { task: 'Ended before.' });
    const running = supervisor.spawn('stepper', { task: 'Runs.' });
    await vi.waitFor(async () => expect(await queue.getJobs(['waiting'])).toHaveLength(1), { interval: 20 });
    const [batch] = await queue.getJobs(['waiting']);
    await redis.hset(keys.batch(batch?.id ?? ''), ended.id, oversize);
    const before = await sentBytes();
    await worker();
    expect(await running.result).toMatchObject({ status: 'completed' });
    expect(await ended.result).toMatchObject({
      status: 'failed',
      error: { code: 'outcome_too_large', fields: { agentId: ended.id, limit: 64 * 1024 * 1024 } },
    });
    expect((await sentBytes()) - before).toBeLessThan(8_000_000);
  });

  it('fails an agent whose job’s return value is larger than an outcome, unread', {
    timeout: 30_000,
  }, async () => {
    const { supervisor, keys } = setUp('oversize-return', { maxBatchSize: 1, reconcileIntervalMs: 100 });
    const handle = supervisor.spawn('stepper', { task: 'Never run.' });
    await vi.waitFor(async () => expect(await redis.exists(keys.job(handle.id))).toBe(1), { interval: 20 });
    const before = await sentBytes();
    // No worker: the job "ended" with a foreign return value, which the supervisor's reconcile finds.
    await redis.hset(keys.job(handle.id), 'returnvalue', oversize, 'finishedOn', '1');
    expect(await handle.result).toMatchObject({
      status: 'failed',
      error: { code: 'outcome_too_large', fields: { agentId: handle.id, size: oversize.length } },
    });
    expect((await sentBytes()) - before).toBeLessThan(8_000_000);
  });

  it('ends an agent whose stored outcome lacks its usage, rather than never', {
    timeout: 30_000,
  }, async () => {
    const { supervisor, queue, keys, worker } = setUp('malformed');
    const ended = supervisor.spawn('stepper', { task: 'Ended before.' });
    const running = supervisor.spawn('stepper', { task: 'Runs.' });
    await vi.waitFor(async () => expect(await queue.getJobs(['waiting'])).toHaveLength(1), { interval: 20 });
    const [batch] = await queue.getJobs(['waiting']);
    const outcome = { status: 'completed', agentId: ended.id, answer: 'done', result: 'done' };
    await redis.hset(keys.batch(batch?.id ?? ''), ended.id, JSON.stringify({ outcome }));
    await worker();
    expect(await running.result).toMatchObject({ status: 'completed' });
    expect(await ended.result).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'job_failed' },
    });
  });

  it('ends a batch agent whose run failed job_failed with retainSeconds 0, though the batch is gone', async () => {
    const { supervisor, queue, keys, worker } = setUp('retain-zero-fail', {
      retainSeconds: 0,
      restart: { maxRetries: 0, baseDelayMs: 10 },
    });
    await worker(['--concurrency', '10']);
    const done = supervisor.spawn('stepper', { task: 'Finishes.' });
    const broken = supervisor.spawn('slow', { task: 'Its journal breaks.', provider: 'slow' });
    const calling = nextEvent(supervisor, 'agent:tool', (event) => event.agentId === broken.id);
    expect(await done.result).toMatchObject({ status: 'completed' });
    await calling;
    await redis.xadd(keys.journal(broken.id), '1000000-0', 'e', 'not an event');
    const outcome = await broken.result;

    // Its run failed with no retry left, in the batch: the reason is in the batch's hash (kept
    // until the supervisor has read every agent) and in its end signal.
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'job_failed', fields: { agentId: broken.id } },
    });
    expect(await Job.fromId(queue, broken.id)).toBeUndefined();
    // Then the supervisor removed the batch and its hash.
    await vi.waitFor(async () => expect(await queue.getJobs(['completed', 'failed'])).toEqual([]), {
      interval: 20,
    });
  });

  it('finds an agent its batch handed off with retainSeconds 0, and removes the batch', async () => {
    const { supervisor, queue, keys, worker } = setUp('retain-zero-park', {
      providers: { simulated: { kind: 'simulated', options: { waits: 1 } } },
      definitions: [waiter],
      parkAfterMs: 100,
      retainSeconds: 0,
      reconcileIntervalMs: 500,
    });
    await worker(['--concurrency', '10']);
    const waiters = [0, 1].map((index) => supervisor.spawn('waiter', { task: `Wait ${index}.` }));
    await Promise.all(
      waiters.map((handle) => nextEvent(supervisor, 'agent:parked', (event) => event.agentId === handle.id)),
    );
    // The batch ended while its agents wait in jobs of their own. The supervisor's next read of
    // their state (reconcileIntervalMs) finds them handed off, and then it has read every agent of
    // the batch: the batch job and its hash go.
    await vi.waitFor(async () => expect(await queue.getJobs(['active', 'completed', 'failed'])).toEqual([]), {
      interval: 20,
    });
    const ownJob = await Job.fromId(queue, waiters[0]?.id ?? '');
    const batchKey = keys.batch((ownJob?.data as { batchId?: string } | undefined)?.batchId ?? '');
    await vi.waitFor(async () => expect(await redis.exists(batchKey)).toBe(0), { interval: 20 });
    for (const handle of waiters) await supervisor.instruct(handle.id, 'go on');
    const outcomes = await Promise.all(waiters.map((handle) => handle.result));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['completed', 'completed']);
    for (const handle of waiters) {
      await vi.waitFor(async () => expect(await redis.exists(keys.job(handle.id))).toBe(0), { interval: 20 });
    }
    // Their jobs' ends did not make the deleted hash again with only their `h` fields.
    expect(await redis.exists(batchKey)).toBe(0);
  });

  it('sets the events stream’s length back to 0 after a Queue of an earlier version reset it', async () => {
    const { supervisor, keys, worker } = setUp('events-reset', { maxBatchSize: 1, reconcileIntervalMs: 50 });
    await worker();
    const meta = `${PREFIX}:${keys.queue}:meta`;
    expect(await supervisor.spawn('stepper', { task: 'Step one.' }).result).toMatchObject({
      status: 'completed',
    });
    // What a worker of an earlier version writes when it opens the queue (BullMQ's default).
    const older = new Queue(keys.queue, {
      connection: { url: server.url, maxRetriesPerRequest: null },
      prefix: PREFIX,
    });
    queues.push(older);
    await older.waitUntilReady();
    await vi.waitFor(async () => expect(await redis.hget(meta, 'opts.maxLenEvents')).toBe('10000'), {
      interval: 20,
    });
    const slowly = supervisor.spawn('slow', { task: 'Step slowly.', provider: 'slow' });
    await vi.waitFor(async () => expect(await redis.hget(meta, 'opts.maxLenEvents')).toBe('0'), {
      interval: 20,
    });
    expect(await slowly.result).toMatchObject({ status: 'completed' });
  });

  it('keeps no result in BullMQ’s events stream but the last job’s', async () => {
    const { supervisor, keys, worker } = setUp('events-stream', { maxBatchSize: 1 });
    await worker();
    const ids: string[] = [];
    for (const task of ['Step one.', 'Step two.', 'Step three.']) {
      const handle = supervisor.spawn('stepper', { task });
      expect(await handle.result).toMatchObject({ status: 'completed' });
      ids.push(handle.id);
    }
    expect(await redis.hget(`${PREFIX}:${keys.queue}:meta`, 'opts.maxLenEvents')).toBe('0');
    const entries = await redis.xrange(keys.events, '-', '+');
    const completed = entries
      .map(([, fields]) =>
        Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : []))),
      )
      .filter((event) => event.event === 'completed')
      .map((event) => event.jobId);
    // Trimmed as each job ends, before its own end is added: at most the last one is there.
    expect(completed.filter((id) => id !== ids[2])).toEqual([]);
  });
});
