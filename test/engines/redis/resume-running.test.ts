import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { INTERRUPTED_TOOL_RESULT } from '../../../src/journal/constants.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import {
  chainProblem,
  definition,
  killWorkers,
  recordedSteps,
  recordToolModule,
  redisServerPath,
  skipReason,
  startWorker,
  stepperProvider,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-resume-running';
const STEPS = 6;
const AGENTS = 4;

// A supervisor that died leaves its agents running on the workers; `troupe resume` (a new
// supervisor spawning the same ids with `resume: true`) must wait for them, not run them a second
// time beside the first run (two runs of one agent: the loser's journal append is refused, its
// retry resumes a third run, and tool calls still running elsewhere are recorded as interrupted).
describe(`the redis backend resuming agents that are still running${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let dir: string;
  let workers: TestWorker[] = [];
  const supervisors: RedisSupervisor[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-resume-running-'));
  });

  afterEach(async () => {
    for (const supervisor of supervisors.splice(0)) await supervisor.close();
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function start(queueName: string): RedisSupervisor {
    const supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      providers: { stepper: stepperProvider(STEPS, 150) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
      toolModules: [{ module: recordToolModule }],
      compat: false,
      cwd: dir,
    });
    supervisors.push(supervisor);
    return supervisor;
  }

  it('a new supervisor that resumes agents still running in a batch job gets their outcomes without running them again', async () => {
    const queueName = uniqueName('resume-running');
    const recordFile = path.join(dir, `${queueName}.tsv`);
    const worker = await startWorker(
      server.url,
      ['--queue', queueName, '--prefix', PREFIX, '--concurrency', '16'],
      {
        TROUPE_SCALEOUT_RECORD: recordFile,
      },
    );
    if (!worker) throw new Error('the worker did not start');
    workers = [worker];
    const ids = Array.from({ length: AGENTS }, (_, index) => `${queueName}-${index}`);
    // The first supervisor's agents run as one batch job; it is then left alone, as a dead one is.
    const first = start(queueName);
    for (const id of ids) first.spawn('stepper', { id, task: `Stepper ${id}.` });
    const deadline = Date.now() + 20_000;
    while (recordedSteps(recordFile).length < AGENTS * 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(recordedSteps(recordFile).length).toBeLessThan(AGENTS * STEPS);

    const second = start(queueName);
    const outcomes = await Promise.all(
      ids.map((id) => second.spawn('stepper', { id, task: `Stepper ${id}.`, resume: true }).result),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(AGENTS).fill('completed'));

    const steps = recordedSteps(recordFile);
    for (const id of ids) {
      const notes = steps.filter(([agentId]) => agentId === id).map(([, note]) => note);
      expect(notes, `the steps ${id} ran`).toEqual(
        Array.from({ length: STEPS }, (_, index) => `step ${index + 1}`),
      );
      const journal = await second.journal(id);
      expect(chainProblem(journal)).toBeUndefined();
      expect(journal.filter((event) => event.type === 'Resumed')).toEqual([]);
      expect(
        journal.some((event) => event.type === 'ToolResult' && event.text === INTERRUPTED_TOOL_RESULT),
      ).toBe(false);
      expect(journal.filter((event) => event.type === 'Completed')).toHaveLength(1);
    }

    // Spawned again once they ended: their outcomes, and no restart is reported (none happened).
    const third = start(queueName);
    const restarted: string[] = [];
    third.on('agent:restarted', (event) => restarted.push(event.agentId));
    const again = await Promise.all(
      ids.map((id) => third.spawn('stepper', { id, task: `Stepper ${id}.`, resume: true }).result),
    );
    expect(again.map((outcome) => outcome.status)).toEqual(Array(AGENTS).fill('completed'));
    expect(restarted).toEqual([]);
  });
});
