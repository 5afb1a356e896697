import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentHandle } from '../../../src/supervisor/agent-handle.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

/**
 * Settles with the outcome, or with 'unsettled' when it has not come after a hang guard (generous:
 * a loaded machine starts threads slowly).
 */
function settled<T>(promise: Promise<T>): Promise<T | 'unsettled'> {
  return Promise.race([
    promise,
    new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 60_000).unref()),
  ]);
}

describe('a quarantine thread that dies while its agent is cancelled', () => {
  it('ends the cancelled agent cancelled and gives the quarantined agent waiting for the thread a new one', async () => {
    supervisor = policySupervisor({
      cwd: tempDir(),
      threads: 1,
      quarantineThreads: 1,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 1, baseDelayMs: 10, maxDelayMs: 10 },
    });
    const sup = supervisor;
    // A kills the shared thread, is quarantined, and on the quarantine thread runs the tool
    // again, which ends that thread when A is cancelled.
    const holding = new Promise<void>((resolve) => {
      let restarted = false;
      sup.on('agent:restarted', (event) => {
        if (event.agentId === a.id) restarted = true;
      });
      sup.on('agent:tool', (event) => {
        if (event.agentId === a.id && restarted && event.phase === 'started') resolve();
      });
    });
    const a = sup.spawn('worker', { task: 'keep calling crash_then_exit_on_cancel' });
    await holding;

    // B kills the replacement shared thread and is quarantined too: it waits for the quarantine
    // thread A holds. A is cancelled once B is in that wait: B's restart timer (10 ms) was set as
    // its `agent:restarted` was emitted, so a 10 ms timer set after it fires after it.
    let b: AgentHandle | undefined;
    const cancelled = new Promise<void>((resolve) => {
      sup.on('agent:restarted', (event) => {
        if (event.agentId !== b?.id) return;
        setImmediate(() =>
          setTimeout(() => {
            a.cancel('test cancels the quarantined agent');
            resolve();
          }, 10),
        );
      });
    });
    b = sup.spawn('worker', { task: 'keep calling poison' });
    await cancelled;

    expect(await settled(a.result)).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(await settled(b.result)).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { fields: { tools: ['poison'] } },
    });
  });
});
