import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobData } from '../../src/engines/redis/job-data.ts';
import type { ActorSpec } from '../../src/protocol/messages.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import {
  killWorkers,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
} from '../engines/redis/helpers.ts';

describe(`traces of agents run by redis workers${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let workers: TestWorker[] = [];
  let dir: string;

  beforeAll(async () => {
    server = await TestRedis.start();
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-trace-redis-'));
    workers = [await startWorker(server.url, ['--concurrency', '4'])];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a fan-out on workers is one trace: every agent span has its chat and tool spans from the worker', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
      't',
    );
    const supervisor = new Supervisor({
      backend: 'redis',
      redisUrl: server.url,
      cwd: dir,
      tracing: { tracer },
    });
    try {
      const results = await supervisor
        .fanOut(Array.from({ length: 3 }, (_, i) => ({ agent: 'worker', task: `Item ${i}: report.` })))
        .all();
      expect(results.map((r) => r.outcome.status)).toEqual(['completed', 'completed', 'completed']);
    } finally {
      await supervisor.close();
    }
    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const agents = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'invoke_agent');
    expect(agents).toHaveLength(3);
    for (const agent of agents) {
      const children = spans.filter((s) => s.parentSpanContext?.spanId === agent.spanContext().spanId);
      const ops = new Set(children.map((s) => s.attributes['gen_ai.operation.name']));
      expect(ops).toEqual(new Set(['chat', 'execute_tool']));
      expect(agent.events.map((e) => e.name)).toContain('troupe.agent.started');
    }
  });

  it("the agent's trace context travels in its job data", () => {
    const spec = {
      agentId: 'a1',
      provider: 'simulated',
      trace: { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`, captureContent: false },
    } as unknown as ActorSpec;
    const data = jobData(spec, {
      options: {
        providers: { simulated: { kind: 'simulated' } },
        limits: {},
        toolModules: [],
        cwd: dir,
        redis: { parkAfterMs: 1, retainSeconds: 1 },
      },
      hostTools: [],
      supervisorId: 's',
    } as unknown as Parameters<typeof jobData>[1]);
    expect(JSON.parse(JSON.stringify(data)).agent.trace).toEqual(spec.trace);
  });
});
