import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { policySupervisor, tempDir } from './helpers.ts';

describe('fanOut with a signal', () => {
  it('runs more than ten agents at once without a MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const controller = new AbortController();
      const specs = Array.from({ length: 40 }, (_, i) => ({ agent: 'worker', task: `Review file${i}.ts.` }));
      const results = await supervisor.fanOut(specs, { concurrency: 20, signal: controller.signal }).all();
      expect(results.map((r) => r.outcome.status)).toEqual(Array(40).fill('completed'));
      // Node reports warnings on the next turn.
      await new Promise((resolve) => setImmediate(resolve));
      // Without the fix every running agent added its own listener to the caller's signal.
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      await supervisor.close();
    }
  });

  it('still cancels every agent when the signal aborts', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const controller = new AbortController();
      const specs = Array.from({ length: 30 }, () => ({ agent: 'worker', task: 'Wait for 1 instruction.' }));
      const run = supervisor.fanOut(specs, { concurrency: 15, signal: controller.signal });
      supervisor.once('agent:waiting', () => controller.abort('stop'));
      const results = await run.all();
      expect(results.map((r) => r.outcome.status)).toEqual(Array(30).fill('failed'));
    } finally {
      await supervisor.close();
    }
  });

  it('spawns none of the specs still queued when the signal aborts: each is a cancelled result with no agent', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const controller = new AbortController();
      const spawned: string[] = [];
      supervisor.on('agent:spawned', (event) => spawned.push(event.agentId));
      const specs = Array.from({ length: 500 }, () => ({ agent: 'worker', task: 'Wait for 1 instruction.' }));
      const run = supervisor.fanOut(specs, { concurrency: 3, signal: controller.signal });
      supervisor.once('agent:waiting', () => controller.abort(new Error('interrupted (Ctrl-C)')));
      const results = await run.all();
      // Before, each of the 497 queued specs was spawned (journalled, sent to the engine) and
      // cancelled at once.
      expect(spawned).toHaveLength(3);
      expect(results).toHaveLength(500);
      expect(results.filter((r) => r.agentId !== '')).toHaveLength(3);
      const queued = results.filter((r) => r.agentId === '');
      expect(queued).toHaveLength(497);
      expect(queued.map((r) => r.index)).toEqual(Array.from({ length: 497 }, (_, i) => i + 3));
      expect(queued[0]?.outcome).toMatchObject({
        status: 'failed',
        agentId: '',
        reason: 'cancelled',
        rounds: 0,
        error: { code: 'cancelled', message: 'Cancelled: interrupted (Ctrl-C)' },
      });
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    } finally {
      await supervisor.close();
    }
  });

  it('spawns nothing when the signal has aborted before the fan-out starts', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const spawned: string[] = [];
      supervisor.on('agent:spawned', (event) => spawned.push(event.agentId));
      const specs = Array.from({ length: 50 }, () => ({ agent: 'worker', task: 'Review a.ts.' }));
      const results = await supervisor.fanOut(specs, { signal: AbortSignal.abort('stop') }).all();
      expect(spawned).toEqual([]);
      expect(results.map((r) => [r.agentId, r.outcome.status])).toEqual(Array(50).fill(['', 'failed']));
    } finally {
      await supervisor.close();
    }
  });

  it('spawn() with one signal for many agents adds one listener to it, not one per agent', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const controller = new AbortController();
      const handles = Array.from({ length: 30 }, () =>
        supervisor.spawn('worker', { task: 'Wait for 1 instruction.', signal: controller.signal }),
      );
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      controller.abort('stop');
      const outcomes = await Promise.all(handles.map((handle) => handle.result));
      expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(30).fill('failed'));
    } finally {
      await supervisor.close();
    }
  });
});
