/**
 * On the redis engine, as on the threads engine, spans a tool makes while it runs on a worker (with
 * an SDK registered there) are children of the call's `execute_tool` span, which the supervisor
 * makes, not of the agent's `invoke_agent` span.
 */
import path from 'node:path';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedResponse } from '../../../src/providers/scripted.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { tempDir } from '../../fixtures/temp-dirs.ts';
import {
  killWorkers,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const SCRIPTED = path.join(repoRoot, 'test/fixtures/mcp/scripted-provider.ts');
// Registers an SDK in the worker's thread (`troupe worker` runs its agents in worker threads).
const SPAN_TOOLS = path.join(repoRoot, 'test/fixtures/telemetry/span-tools.ts');

describe(`the spans of a tool on a redis worker${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let workers: TestWorker[] = [];
  const queueName = uniqueName('tool-span');

  beforeAll(async () => {
    server = await TestRedis.start();
    workers = [await startWorker(server.url, ['--queue', queueName])];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await server?.destroy();
  });

  it('are children of its execute_tool span', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ id: 'on-worker', name: 'traced_work', arguments: {} }] },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { done: true } } }] },
    ];
    const supervisor = new Supervisor({
      backend: 'redis',
      redisUrl: server.url,
      queueName,
      cwd: tempDir('troupe-redis-tool-span-'),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      toolModules: [{ module: SPAN_TOOLS, export: 'spanTools' }],
      // Content on: the tool's result (its span's ids) is on its execute_tool span.
      tracing: { tracer: provider.getTracer('test'), captureContent: true },
    });
    try {
      const outcome = await supervisor.spawn('worker', { task: 'Do the work.' }).result;
      expect(outcome.status).toBe('completed');
    } finally {
      await supervisor.close();
    }
    const spans = exporter.getFinishedSpans();
    const agent = spans.find((span) => span.name === 'invoke_agent worker');
    const tool = spans.find(
      (span) =>
        span.name.startsWith('execute_tool') && span.attributes['gen_ai.tool.call.id'] === 'on-worker',
    );
    expect(agent).toBeDefined();
    expect(tool?.parentSpanContext?.spanId).toBe(agent?.spanContext().spanId);
    const result = tool?.attributes['gen_ai.tool.call.result'];
    expect(JSON.parse(typeof result === 'string' ? result : '{}')).toEqual({
      traceId: agent?.spanContext().traceId,
      parent: tool?.spanContext().spanId,
    });
  }, 60_000);
});
