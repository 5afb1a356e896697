import { describe, expect, it } from 'vitest';
import { policySupervisor, tempDir } from './helpers.ts';

describe('fanOut with keepResults: false', () => {
  it('runs every agent but keeps no handle or result once each has ended', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const completed: string[] = [];
      supervisor.on('agent:completed', (event) => completed.push(event.agentId));
      const specs = Array.from({ length: 20 }, (_, i) => ({ agent: 'worker', task: `Review file${i}.ts.` }));
      const run = supervisor.fanOut(specs, { concurrency: 5, keepResults: false });
      // Before, the fan-out held all 20 handles and outcomes until it was dropped: 20,000 of them
      // for a `troupe fanout` over a 20,000-item data set.
      expect(await run.all()).toEqual([]);
      expect(completed).toHaveLength(20);
      expect(run.handles).toEqual([]);
      const yielded: unknown[] = [];
      for await (const result of run) yielded.push(result);
      expect(yielded).toEqual([]);
    } finally {
      await supervisor.close();
    }
  });

  it('keeps them by default', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const specs = Array.from({ length: 3 }, (_, i) => ({ agent: 'worker', task: `Review file${i}.ts.` }));
      const run = supervisor.fanOut(specs, { concurrency: 2 });
      expect((await run.all()).map((result) => result.index)).toEqual([0, 1, 2]);
      expect(run.handles.filter(Boolean)).toHaveLength(3);
    } finally {
      await supervisor.close();
    }
  });
});
