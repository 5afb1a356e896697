/**
 * An agent the Supervisor ends when its thread dies (its result delivered, its cancel under way):
 * its loop died before it journalled that end, so the engine writes it, and a resume or report
 * sees the agent ended as its outcome says, not an unfinished one to run again.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminal } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
import type { AgentHandle } from '../../../src/supervisor/agent-handle.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function faultySupervisor(journalDir: string): Supervisor {
  return policySupervisor({
    cwd: tempDir(),
    journalDir,
    threads: 1,
    defaultProvider: 'policy',
    // Far longer than the test: the thread's own death, not the grace timer, ends the cancel.
    graceMs: 600_000,
    toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
  });
}

function toolStarted(handle: AgentHandle): Promise<void> {
  return new Promise((resolve) => {
    handle.on('tool', (event) => {
      if (event.phase === 'started') resolve();
    });
  });
}

describe('an agent ended by the Supervisor when its thread died', () => {
  it('after its result was accepted: its journal ends with that Completed event, once', async () => {
    const journalDir = tempDir();
    supervisor = faultySupervisor(journalDir);
    const crashes: string[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event.cause.code));
    // exit_on_completed ends the thread as the loop writes Completed, after complete_task was accepted.
    const handle = supervisor.spawn('worker', { task: 'call exit_on_completed' });
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'completed', result: { called: 'exit_on_completed' } });
    expect(crashes).toHaveLength(1);
    const events = readJournal(path.join(journalDir, `${handle.id}.jsonl`)).events;
    expect(events.filter(isTerminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'Completed',
      result: { called: 'exit_on_completed' },
      answer: outcome.status === 'completed' ? outcome.answer : 'not completed',
    });
  });

  it('while its cancel was under way: its journal ends with Failed(cancelled), once', async () => {
    const journalDir = tempDir();
    supervisor = faultySupervisor(journalDir);
    // exit_on_cancel ends the thread when its call is cancelled: a death of its own cause
    // (thread_crashed), not the grace timer's cancel_timeout.
    const handle = supervisor.spawn('worker', { task: 'call exit_on_cancel' });
    const crashes: string[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event.cause.code));
    await toolStarted(handle);
    handle.cancel('the test cancels it');
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled', error: { code: 'cancelled' } });
    expect(crashes).toEqual(['thread_crashed']);
    const events = readJournal(path.join(journalDir, `${handle.id}.jsonl`)).events;
    expect(events.filter(isTerminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'cancelled',
      error: { code: 'cancelled', fields: { reason: 'the test cancels it' } },
    });
  });
});
