/**
 * An agent the Supervisor ends when its thread dies (its result delivered, its cancel under way,
 * the grace timer's terminate) made model requests first: its outcome carries what its journal
 * says it spent, wherever the outcome goes (`handle.result`, `agent:completed`/`agent:failed`,
 * `runUsage`), as the loop's own end would. Before, it said 0 tokens, $0 and 0 rounds.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminal } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
import type { AgentOutcome } from '../../../src/loop/types.ts';
import type { AgentHandle } from '../../../src/supervisor/agent-handle.ts';
import type { SupervisorOptions } from '../../../src/supervisor/options.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { SPEND } from '../../fixtures/supervisor/spent-provider.ts';
import { fixtures, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function spentSupervisor(journalDir: string, options: SupervisorOptions = {}): Supervisor {
  return new Supervisor({
    cwd: tempDir(),
    journalDir,
    threads: 1,
    providers: { spent: { kind: 'module', module: path.join(fixtures, 'spent-provider.ts') } },
    defaultProvider: 'spent',
    restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    // Far longer than the test unless a case sets it: the thread's own death ends the cancel.
    graceMs: 600_000,
    toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    ...options,
  });
}

function toolStarted(handle: AgentHandle, name: string): Promise<void> {
  return new Promise((resolve) => {
    handle.on('tool', (event) => {
      if (event.phase === 'started' && event.tool === name) resolve();
    });
  });
}

/** The ended outcome of every agent, as `agent:completed` and `agent:failed` carried it. */
function endedEvents(sup: Supervisor): AgentOutcome[] {
  const ends: AgentOutcome[] = [];
  sup.on('agent:completed', (event) => ends.push(event.outcome));
  sup.on('agent:failed', (event) => ends.push(event.outcome));
  return ends;
}

/**
 * Checks that `outcome` spent `requests` requests of SPEND in one round, that its journal's one terminal event
 * says the same, and that the supervisor's `runUsage` counted it once.
 */
function expectSpent(sup: Supervisor, journalDir: string, outcome: AgentOutcome, requests: number): void {
  const { inputTokens, outputTokens } = SPEND.usage;
  const cost =
    (requests * (inputTokens * SPEND.price.inputPerMTok + outputTokens * SPEND.price.outputPerMTok)) / 1e6;
  expect(outcome.usage).toMatchObject({
    inputTokens: requests * inputTokens,
    outputTokens: requests * outputTokens,
  });
  expect(outcome.costUsd).toBeCloseTo(cost, 12);
  // One provider turn: its tool calls are answered within it, a request each (steps).
  expect(outcome).toMatchObject({ rounds: 1, steps: requests });
  const terminal = readJournal(path.join(journalDir, `${outcome.agentId}.jsonl`)).events.filter(isTerminal);
  expect(terminal).toHaveLength(1);
  expect(terminal[0]).toMatchObject({
    usage: outcome.usage,
    costUsd: outcome.costUsd,
    rounds: outcome.rounds,
    steps: outcome.steps,
  });
  expect(sup.runUsage.usedTokens).toBe(requests * (inputTokens + outputTokens));
  expect(sup.runUsage.usedCostUsd).toBeCloseTo(cost, 12);
}

describe('an agent ended by the Supervisor when its thread died carries what it spent', () => {
  it('after its result was accepted: handle.result, agent:completed and runUsage', async () => {
    const journalDir = tempDir();
    supervisor = spentSupervisor(journalDir);
    const ends = endedEvents(supervisor);
    const crashes: string[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event.cause.code));
    // note, exit_on_completed, complete_task: its thread exits as the loop writes Completed.
    const handle = supervisor.spawn('worker', { task: 'call exit_on_completed' });
    const outcome = await handle.result;
    expect(crashes).toEqual(['thread_crashed']);
    expect(outcome).toMatchObject({ status: 'completed', result: { called: 'exit_on_completed' } });
    expectSpent(supervisor, journalDir, outcome, 3);
    expect(ends).toEqual([outcome]);
  });

  it('with runLimits: the receipts counted as they came are not counted again at its end', async () => {
    const journalDir = tempDir();
    supervisor = spentSupervisor(journalDir, { runLimits: { maxTotalTokens: 1_000_000 } });
    const handle = supervisor.spawn('worker', { task: 'call exit_on_completed' });
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'completed' });
    expectSpent(supervisor, journalDir, outcome, 3);
  });

  it('while its cancel was under way (its thread died of the cancel)', async () => {
    const journalDir = tempDir();
    supervisor = spentSupervisor(journalDir);
    const ends = endedEvents(supervisor);
    const handle = supervisor.spawn('worker', { task: 'call exit_on_cancel' });
    await toolStarted(handle, 'exit_on_cancel');
    handle.cancel('the test cancels it');
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expectSpent(supervisor, journalDir, outcome, 2);
    expect(ends).toEqual([outcome]);
  });

  it('cancelled and terminated after graceMs: settled once its thread is gone', async () => {
    const journalDir = tempDir();
    supervisor = spentSupervisor(journalDir, { graceMs: 200 });
    const crashes: string[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event.cause.code));
    // block_after_report holds its thread, deaf to the cancel, until the thread is terminated.
    const handle = supervisor.spawn('worker', { task: 'call block_after_report' });
    await toolStarted(handle, 'block_after_report');
    handle.cancel('the test cancels it');
    const outcome = await handle.result;
    expect(crashes).toEqual(['cancel_timeout']);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled', error: { code: 'cancelled' } });
    expectSpent(supervisor, journalDir, outcome, 2);
  });
});
