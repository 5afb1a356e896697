import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../../src/journal/reader.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { makeDefinition } from '../../prompt/make-definition.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

/** The outcome, or 'unsettled' after a hang guard (generous: a loaded machine starts threads slowly). */
function settled<T>(promise: Promise<T>): Promise<T | 'unsettled'> {
  return Promise.race([
    promise,
    new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 45_000).unref()),
  ]);
}

describe('a blamed agent waiting for a quarantine thread another tree holds', () => {
  it('fails quarantine_wait_timeout after quarantineWaitMs, journalled, and the holder goes on', async () => {
    const journalDir = tempDir();
    supervisor = policySupervisor({
      cwd: tempDir(),
      journalDir,
      threads: 1,
      quarantineThreads: 1,
      quarantineWaitMs: 200,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 10 },
    });
    const sup = supervisor;
    // A kills the shared thread once, is quarantined, and on the quarantine thread holds it in a
    // call that ends only when A is cancelled.
    let aRestarted = false;
    const holding = new Promise<void>((resolve) => {
      sup.on('agent:restarted', (event) => {
        if (event.agentId === a.id) aRestarted = true;
      });
      sup.on('agent:tool', (event) => {
        if (event.agentId === a.id && aRestarted && event.phase === 'started') resolve();
      });
    });
    const a = sup.spawn('worker', { task: 'keep calling crash_then_exit_on_cancel' });
    await holding;

    // B, of another tree, kills the replacement shared thread and waits for the quarantine thread.
    const b = sup.spawn('worker', { task: 'keep calling poison' });
    // Without the bound, B waited for as long as A lived.
    const outcome = await settled(b.result);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: {
        code: 'quarantine_wait_timeout',
        fields: { agentId: b.id, timeoutMs: 200, quarantineThreads: 1, holders: [a.id] },
      },
    });
    const events = readJournal(path.join(journalDir, `${b.id}.jsonl`)).events;
    expect(events.at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'crashed',
      error: { code: 'quarantine_wait_timeout' },
    });
    expect(events.filter((event) => event.type === 'Failed' || event.type === 'Completed')).toHaveLength(1);
    // What it spent before is in the event, as its loop would have written it.
    const rounds = new Set(
      events.flatMap((event) => (event.type === 'InferenceSubmitted' ? [event.round] : [])),
    ).size;
    expect(rounds).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({ rounds });
    expect(outcome).toMatchObject({ rounds });
    // A still runs on its quarantine thread: its cancel ends it there.
    let aEnded = false;
    void a.result.then(() => {
      aEnded = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(aEnded).toBe(false);
    a.cancel('the test is over');
    expect(await settled(a.result)).toMatchObject({ status: 'failed', reason: 'cancelled' });
  });

  it('runs beside an agent parked in wait_for_instruction on the quarantine thread, and both end', async () => {
    supervisor = policySupervisor({
      cwd: tempDir(),
      threads: 1,
      quarantineThreads: 1,
      providers: { crashWait: { kind: 'module', module: path.join(fixtures, 'crash-wait-provider.ts') } },
      defaultProvider: 'crashWait',
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 10 },
    });
    const sup = supervisor;
    const definition = makeDefinition({
      name: 'waiter',
      path: '/quarantine/waiter.md',
      agentsMd: false,
      tools: ['crash_exit', 'wait_for_instruction', 'complete_task'],
    });
    const starts: { agentId: string; hostId?: number; resumed: boolean }[] = [];
    sup.on('agent:started', (event) => starts.push(event));
    // A kills the shared thread, is quarantined, and parks on the quarantine thread.
    let aRestarted = false;
    const parked = new Promise<void>((resolve) => {
      sup.on('agent:restarted', (event) => {
        if (event.agentId === a.id) aRestarted = true;
      });
      sup.on('agent:waiting', (event) => {
        if (event.agentId === a.id && aRestarted) resolve();
      });
    });
    const a = sup.spawn(definition, { task: 'Kill your thread, then wait.' });
    await parked;

    // B, of another tree, kills the replacement shared thread and is quarantined in turn. Without
    // the fix it waited for A's thread for as long as A was parked (here: until quarantineWaitMs).
    const b = sup.spawn(definition, { task: 'Kill your thread, then complete.' });
    expect(await settled(b.result)).toMatchObject({ status: 'completed', result: { told: null } });
    await sup.instruct(a.id, 'finish');
    expect(await settled(a.result)).toMatchObject({
      status: 'completed',
      result: { told: expect.stringContaining('finish') },
    });
    // B's restart ran on A's quarantine thread.
    const resumedOn = (id: string) => starts.find((event) => event.agentId === id && event.resumed)?.hostId;
    expect(resumedOn(b.id)).toBe(resumedOn(a.id));
    expect(resumedOn(a.id)).toBeDefined();
  });
});
