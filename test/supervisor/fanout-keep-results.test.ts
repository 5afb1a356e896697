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

  it('still gives the results of specs refused at spawn, which no event reports', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const failed: string[] = [];
      supervisor.on('agent:failed', (event) => failed.push(event.agentId));
      const specs = [
        { agent: 'worker', task: 'Review a.ts.' },
        // A cast from JavaScript: `task` must be a string.
        { agent: 'worker', task: 42 as unknown as string },
      ];
      const results = await supervisor.fanOut(specs, { concurrency: 1, keepResults: false }).all();
      // Before, all() resolved to [] and the refusal was reported nowhere.
      expect(results.map((result) => [result.index, result.agentId, result.outcome.status])).toEqual([
        [1, '', 'failed'],
      ]);
      expect(results[0]?.outcome).toMatchObject({ reason: 'invalid_request' });
      expect(failed).toEqual([]);
    } finally {
      await supervisor.close();
    }
  });

  it('yields each refused spec with for await, as it is refused', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const specs = [
        { agent: 'worker', task: 'Review a.ts.' },
        { agent: 'worker', task: 42 as unknown as string },
        { agent: 'worker', task: 'Review b.ts.' },
      ];
      const run = supervisor.fanOut(specs, { concurrency: 1, keepResults: false });
      const yielded: [number, string][] = [];
      // Before, for await yielded nothing: the refusal was only in all(), once every agent ended.
      for await (const result of run) yielded.push([result.index, result.outcome.status]);
      expect(yielded).toEqual([[1, 'failed']]);
      expect((await run.all()).map((result) => result.index)).toEqual([1]);
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
