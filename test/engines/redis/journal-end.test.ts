/**
 * Ends the redis engine decides while no worker runs the agent (its job failed past its stall cap,
 * its job vanished, its cancel outlived graceMs with no worker) are journalled: the journal ends
 * with exactly one terminal event, the one delivered, with the totals the journal's receipts add
 * up to, as the agent's loop would have written it (and as the threads engine does).
 */
import { type FSWatcher, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { RedisEngine } from '../../../src/engines/redis/redis-engine.ts';
import { type AuditEvent, isTerminal } from '../../../src/journal/events.ts';
import { resumeState } from '../../../src/journal/resume.ts';
import type { AgentOutcome } from '../../../src/loop/types.ts';
import type { ScriptedResponse } from '../../../src/providers/scripted.ts';
import type { AgentHandle } from '../../../src/supervisor/agent-handle.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import { tempDir } from '../../fixtures/temp-dirs.ts';
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

const SCRIPTED = path.join(repoRoot, 'test/fixtures/mcp/scripted-provider.ts');

/** The journal ends with one terminal event, the outcome delivered, with the journal's totals. */
function expectEndedWith(journal: readonly AuditEvent[], outcome: AgentOutcome): void {
  expect(chainProblem(journal)).toBeUndefined();
  expect(journal.filter(isTerminal)).toHaveLength(1);
  const last = journal.at(-1);
  expect(last?.type).toBe('Failed');
  if (last?.type !== 'Failed' || outcome.status !== 'failed') throw new Error('expected a failed end');
  expect(last.reason).toBe(outcome.reason);
  expect(last.error.code).toBe(outcome.error.code);
  const spent = resumeState(journal.slice(0, -1));
  expect(outcome.rounds).toBe(spent.roundsUsed);
  expect(outcome.rounds).toBeGreaterThan(0);
  expect(outcome.usage).toEqual(spent.totals.usage);
  expect(last.rounds).toBe(outcome.rounds);
  expect(last.usage).toEqual(outcome.usage);
}

describe(`ends the redis engine decides${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;
  let workers: TestWorker[] = [];
  let supervisor: RedisSupervisor | undefined;

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await supervisor?.close();
    supervisor = undefined;
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
  });

  it('journals the failure of an agent whose worker died past its stall cap', async () => {
    const queueName = uniqueName('stall-cap');
    const dir = tempDir('troupe-redis-stall-cap-');
    const recordFile = path.join(dir, 'steps.tsv');
    writeFileSync(recordFile, '');
    const args = ['--queue', queueName, '--lock-duration-ms', '1000', '--stalled-interval-ms', '300'];
    // Its agent's second record_step never returns: the worker is killed there, mid-run.
    const doomed = await startWorker(server.url, [...args, '--max-stalled', '0'], {
      TROUPE_SCALEOUT_RECORD: recordFile,
      TROUPE_SCALEOUT_HANG_AT: '2',
    });
    workers = [doomed];
    supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      cwd: dir,
      reconcileIntervalMs: 100,
      restart: { maxRetries: 0 },
      providers: { stepper: stepperProvider(5) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
      toolModules: [{ module: recordToolModule }],
      compat: false,
    });
    const handle = supervisor.spawn('stepper', { task: 'Step.' });
    let watcher: FSWatcher | undefined;
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (recordedSteps(recordFile).some(([id, note]) => id === handle.id && note === 'step 2')) resolve();
      };
      watcher = watch(recordFile, check);
      check();
    });
    watcher?.close();
    doomed.kill('SIGKILL');
    await doomed.exited;
    // Its stalled-job check fails the job: no stall is allowed.
    workers.push(await startWorker(server.url, [...args, '--max-stalled', '0']));
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'job_failed' } });
    expectEndedWith(await supervisor.journal(handle.id), outcome);
  }, 60_000);

  it('journals the failure of an agent whose job vanished, and the cancel of one no worker runs', async () => {
    const queueName = uniqueName('no-worker');
    const keys = new ScaleoutKeys('troupe', queueName);
    const worker = await startWorker(server.url, ['--queue', queueName]);
    workers = [worker];
    const steps: ScriptedResponse[] = [{ toolCalls: [{ name: 'wait_for_instruction', arguments: {} }] }];
    supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      cwd: tempDir('troupe-redis-no-worker-'),
      reconcileIntervalMs: 100,
      parkAfterMs: 0,
      graceMs: 200,
      maxBatchSize: 1,
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      definitions: [definition('waiter', { tools: ['complete_task', 'wait_for_instruction'] })],
      compat: false,
    });
    const parked = (agentId: string) =>
      nextEvent(supervisor as RedisSupervisor, 'agent:parked', (e) => e.agentId === agentId);
    const vanishing = supervisor.spawn('waiter', { task: 'Wait.' });
    const cancelled = supervisor.spawn('waiter', { task: 'Wait too.' });
    await Promise.all([parked(vanishing.id), parked(cancelled.id)]);
    // Both jobs wait in the delayed set, their journals at a Waiting event; no worker is left.
    await killWorkers(workers);
    workers = [];

    await redis.del(keys.job(vanishing.id));
    const lost = await vanishing.result;
    expect(lost).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'job_lost' } });
    expectEndedWith(await supervisor.journal(vanishing.id), lost);

    cancelled.cancel('no longer needed');
    const ended = await cancelled.result;
    expect(ended).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expectEndedWith(await supervisor.journal(cancelled.id), ended);

    // A retry continues a fork of that journal (unfinished); it is cancelled while its job is
    // being added, before any worker could take it.
    const run = RedisEngine.prototype.run;
    let retry: AgentHandle | undefined;
    vi.spyOn(RedisEngine.prototype, 'run').mockImplementation(function (this: RedisEngine, spec) {
      run.call(this, spec);
      retry?.cancel('changed my mind');
    });
    retry = supervisor.spawn('waiter', { task: 'Wait too.', retryOf: cancelled.id });
    const retried = await retry.result;
    expect(retried).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expectEndedWith(await supervisor.journal(retry.id), retried);
  }, 60_000);
});
