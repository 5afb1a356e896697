/**
 * A fan-out whose spec the supervisor refuses at spawn (a wrong-shaped option from JavaScript or a
 * cast) still ends: `all()` never rejects and never hangs, the refused spec is a failed result
 * (`invalid_request`), nothing is left as an unhandled rejection, and the fan-out's
 * `invoke_workflow` span ends, so the trace a collector gets has its root.
 */
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { SpawnSpec } from '../../src/supervisor/fanout.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};
afterEach(async () => {
  process.off('unhandledRejection', onUnhandled);
  unhandled.length = 0;
  await supervisor?.close();
  supervisor = undefined;
});

const specs: SpawnSpec[] = [
  { agent: 'worker', task: 'Say hello.' },
  // A cast from JavaScript: `task` must be a string.
  { agent: 'worker', task: 42 as unknown as string },
  { agent: 'worker', task: 'Say goodbye.' },
];

describe('a fan-out with a spec refused at spawn', () => {
  for (const concurrency of [undefined, 1]) {
    it(`ends with a failed result for it and a finished workflow span (concurrency ${concurrency ?? 'unlimited'})`, async () => {
      process.on('unhandledRejection', onUnhandled);
      const exporter = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      supervisor = policySupervisor({ cwd: tempDir(), tracing: { tracer: provider.getTracer('troupe') } });
      const fanOut = supervisor.fanOut(specs, concurrency === undefined ? {} : { concurrency });
      const results = await fanOut.all();
      expect(results.map((r) => [r.index, r.outcome.status])).toEqual([
        [0, 'completed'],
        [1, 'failed'],
        [2, 'completed'],
      ]);
      const refused = results[1]?.outcome;
      expect(refused?.status === 'failed' && [refused.reason, refused.error.code]).toEqual([
        'invalid_request',
        'invalid_option',
      ]);
      const streamed: number[] = [];
      for await (const result of fanOut) streamed.push(result.index);
      expect(streamed.sort()).toEqual([0, 1, 2]);
      // A rejection nobody handles would surface on a later turn.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);

      const spans = exporter.getFinishedSpans();
      const workflow = spans.find((s) => s.name === 'invoke_workflow fanout') as ReadableSpan;
      expect(workflow).toBeDefined();
      const agents = spans.filter((s) => s.name === 'invoke_agent worker');
      expect(agents).toHaveLength(2);
      for (const agent of agents) expect(agent.parentSpanContext?.spanId).toBe(workflow.spanContext().spanId);
    }, 60_000);
  }
});
