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
