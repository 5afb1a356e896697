import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import type { SpawnSpec } from '../../src/supervisor/fanout.ts';
import { policySupervisor, tempDir } from './helpers.ts';

/** `count` specs from a generator that records how many it has built and whether it was closed. */
function countingSpecs(count: number, task: (index: number) => string) {
  const state = { built: 0, closed: false };
  function* specs(): Generator<SpawnSpec> {
    try {
      for (let index = 0; index < count; index += 1) {
        state.built += 1;
        yield { agent: 'worker', task: task(index) };
      }
    } finally {
      state.closed = true;
    }
  }
  return { state, specs: specs() };
}

describe('fanOut over a generator', () => {
  it('takes a spec only when a slot frees, and runs them all in input order', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const { state, specs } = countingSpecs(12, (index) => `Review file${index}.ts.`);
      let builtAtFirstStart: number | undefined;
      supervisor.once('agent:started', () => {
        builtAtFirstStart = state.built;
      });
      const run = supervisor.fanOut(specs, { concurrency: 3 });
      // Before, fanOut spread the iterable: all 12 specs were built before it returned.
      expect(state.built).toBe(3);
      const results = await run.all();
      expect(builtAtFirstStart).toBe(3);
      expect(results.map((result) => [result.index, result.outcome.status])).toEqual(
        Array.from({ length: 12 }, (_, index) => [index, 'completed']),
      );
      expect(results.map((result) => result.spec.task)).toEqual(
        Array.from({ length: 12 }, (_, index) => `Review file${index}.ts.`),
      );
    } finally {
      await supervisor.close();
    }
  });

  it("the workflow span counts a generator's specs once it has taken them all", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const supervisor = policySupervisor({
      journalDir: tempDir(),
      tracing: { tracer: provider.getTracer('t') },
    });
    try {
      const { specs } = countingSpecs(4, (index) => `Review file${index}.ts.`);
      await supervisor.fanOut(specs, { concurrency: 2 }).all();
      const workflow = exporter.getFinishedSpans().find((span) => span.name === 'invoke_workflow fanout');
      expect(workflow?.attributes['troupe.fanout.agents']).toBe(4);
    } finally {
      await supervisor.close();
    }
  });

  it('with keepResults: false, builds none of the queued specs once the signal aborts', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const controller = new AbortController();
      const { state, specs } = countingSpecs(500, () => 'Wait for 1 instruction.');
      const run = supervisor.fanOut(specs, { concurrency: 3, signal: controller.signal, keepResults: false });
      supervisor.once('agent:waiting', () => controller.abort(new Error('interrupted (Ctrl-C)')));
      expect(await run.all()).toEqual([]);
      expect(state).toEqual({ built: 3, closed: true });
    } finally {
      await supervisor.close();
    }
  });

  it('keeping results, a queued spec is still a cancelled result once the signal aborts', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const controller = new AbortController();
      const { specs } = countingSpecs(20, () => 'Wait for 1 instruction.');
      const run = supervisor.fanOut(specs, { concurrency: 2, signal: controller.signal });
      supervisor.once('agent:waiting', () => controller.abort('stop'));
      const results = await run.all();
      expect(results.map((result) => result.index)).toEqual(Array.from({ length: 20 }, (_, index) => index));
      expect(results.filter((result) => result.agentId === '')).toHaveLength(18);
    } finally {
      await supervisor.close();
    }
  });

  it('an iterable that throws rejects all() once the agents already spawned have ended', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const completed: string[] = [];
      supervisor.on('agent:completed', (event) => completed.push(event.agentId));
      function* specs(): Generator<SpawnSpec> {
        yield { agent: 'worker', task: 'Review a.ts.' };
        yield { agent: 'worker', task: 'Review b.ts.' };
        throw new Error('the data set is unreadable past row 2');
      }
      const run = supervisor.fanOut(specs(), { concurrency: 1 });
      await expect(run.all()).rejects.toThrow('the data set is unreadable past row 2');
      expect(completed).toHaveLength(2);
      await expect(
        (async () => {
          for await (const _ of run) {
            // drains the two kept results, then rethrows
          }
        })(),
      ).rejects.toThrow('unreadable');
    } finally {
      await supervisor.close();
    }
  });

  it('an undefined among the specs is a refused spec, not the end of them', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const specs = [
        { agent: 'worker', task: 'Review a.ts.' },
        undefined as unknown as SpawnSpec,
        { agent: 'worker', task: 'Review b.ts.' },
      ];
      const results = await supervisor.fanOut(specs, { concurrency: 1 }).all();
      expect(results.map((result) => [result.index, result.outcome.status])).toEqual([
        [0, 'completed'],
        [1, 'failed'],
        [2, 'completed'],
      ]);
    } finally {
      await supervisor.close();
    }
  });
});
