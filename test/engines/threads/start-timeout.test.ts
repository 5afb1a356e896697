/**
 * A thread that never gets ready (stuck loading its modules) is bounded by `threadStartTimeoutMs`:
 * the Supervisor's start fails with a typed error naming the timeout instead of waiting for ever,
 * a crashed thread's replacement is tried a bounded number of times, and close() still ends.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../src/errors.ts';
import { isTerminal } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

const neverReady = path.join(import.meta.dirname, '../../fixtures/threads/never-ready.cjs');

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  delete process.env.TROUPE_TEST_NEVER_READY_AFTER;
});

/** One thread that never gets ready, given 300 ms. */
const neverReadySupervisor = (): Supervisor =>
  policySupervisor({
    threads: 1,
    cwd: tempDir(),
    execArgv: ['--require', neverReady],
    threadStartTimeoutMs: 300,
  });

describe('threadStartTimeoutMs', () => {
  it('fails the start with thread_start_failed, cause thread_start_timeout, when a thread never gets ready', async () => {
    supervisor = neverReadySupervisor();
    const error = await supervisor.start().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isTroupeError(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'thread_start_failed',
      fields: { cause: 'thread_start_timeout' },
    });
    expect((error as Error).message).toContain('was not ready after 300 ms');
  });

  it('an agent spawned meanwhile fails instead of waiting for a thread', async () => {
    supervisor = neverReadySupervisor();
    const outcome = await supervisor.spawn('worker', { task: 'Say hello.', provider: 'simulated' }).result;
    expect(outcome.status).toBe('failed');
  });

  it('a crashed thread whose replacements never get ready: its bystanders fail after three tries, not wait for ever, and are not charged', async () => {
    const cwd = tempDir();
    const blockFile = path.join(cwd, 'block-new-threads');
    // Read by each new thread's copy of the environment: threads started after the file exists block.
    process.env.TROUPE_TEST_NEVER_READY_AFTER = blockFile;
    const journalDir = tempDir();
    supervisor = policySupervisor({
      threads: 1,
      cwd,
      journalDir,
      defaultProvider: 'policy',
      execArgv: ['--require', neverReady],
      // Long enough for the first thread's normal start on a loaded machine (~0.3 s of CPU): only
      // the blocked replacements may reach it (three tries, while the quarantine thread's start
      // fails too). A replacement that throws while loading is no quicker here: after the crash,
      // piscina was seen to keep its task queued, and only this timeout ended the wait.
      threadStartTimeoutMs: 6000,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    });
    // Parked on its instruction wait when the thread dies: not blamed, so it waits for a shared
    // thread (the faulty agent waits for a quarantine thread, which never starts either).
    await supervisor.start();
    const bystander = supervisor.spawn('worker', { task: 'Wait for one instruction, then report.' });
    await Promise.race([
      new Promise<void>((resolve) => bystander.once('waiting', () => resolve())),
      bystander.result,
    ]);
    writeFileSync(blockFile, '');
    let respawned = 0;
    supervisor.on('thread:respawned', () => {
      respawned += 1;
    });
    const charged: boolean[] = [];
    supervisor.on('agent:restarted', (event) => {
      if (event.agentId === bystander.id) charged.push(event.charged);
    });
    const faulty = supervisor.spawn('worker', { task: 'call crash_exit' });
    const faultyOutcome = await faulty.result;
    expect(faultyOutcome).toMatchObject({ status: 'failed', reason: 'crashed' });
    expect(await bystander.result).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'thread_start_failed', fields: { cause: 'thread_start_timeout' } },
    });
    // The engine failed both with no thread running them: it ends their journals too (the faulty
    // one's quarantine thread did not start; no thread was left for the bystander).
    const ends = (agentId: string) => {
      const events = readJournal(path.join(journalDir, `${agentId}.jsonl`)).events;
      return { terminal: events.filter(isTerminal).length, last: events.at(-1) };
    };
    const faultyCode = faultyOutcome.status === 'failed' ? faultyOutcome.error.code : undefined;
    expect(faultyCode).toBeDefined();
    expect(ends(faulty.id)).toMatchObject({
      terminal: 1,
      last: { type: 'Failed', reason: 'crashed', error: { code: faultyCode } },
    });
    expect(ends(bystander.id)).toMatchObject({
      terminal: 1,
      last: {
        type: 'Failed',
        reason: 'crashed',
        error: { code: 'thread_start_failed', fields: { cause: 'thread_start_timeout' } },
      },
    });
    expect(respawned).toBe(0);
    // Placed on each replacement while it started, alone there: a thread that never got ready ran
    // no code of its agents, so its death is not theirs (the bystander is never quarantined).
    expect(charged.length).toBeGreaterThan(1);
    expect(charged).toEqual(charged.map(() => false));
    // Three replacement starts of 6 s each at least, back to back: the suite's default hang guard.
  });

  it('refuses a timeout that is not a positive integer', () => {
    expect(() => policySupervisor({ cwd: tempDir(), threadStartTimeoutMs: 0 })).toThrow(
      /threadStartTimeoutMs/,
    );
  });
});
