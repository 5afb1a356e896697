/**
 * An MCP tool call of a traced agent carries the W3C trace context of its `execute_tool` span in
 * the request's `_meta` (`traceparent`, the key MCP reserves for it), so the server's spans join
 * the agent's trace; an agent that is not traced sends none. On the redis engine too: its worker
 * asks the supervisor for the call's span over Redis.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import type { ScriptedResponse } from '../../src/providers/scripted.ts';
import type { SupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import {
  killWorkers,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  uniqueName,
} from '../engines/redis/helpers.ts';
import { mcpFixtures, scratch } from './helpers.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function definition(): AgentDefinition {
  const text = '---\nname: recorder\ndescription: Stores.\ntools: [mcp__rec__store_secrets]\n---\nStore.\n';
  const loaded = parseDefinition(text, '/agents/recorder.md');
  if (!loaded.definition) throw new Error(JSON.stringify(loaded.errors));
  return loaded.definition;
}

/** Runs one agent that calls the recording server's tool once; returns the requests it got. */
async function callOnce(options: Partial<SupervisorOptions>): Promise<{ _meta?: Record<string, unknown> }[]> {
  const { dir, cleanup } = scratch();
  const record = path.join(dir, 'calls.jsonl');
  const steps: ScriptedResponse[] = [
    { toolCalls: [{ name: 'mcp__rec__store_secrets', arguments: { name: 'a', secrets: ['b'] } }] },
    { text: 'done' },
  ];
  const supervisor = new Supervisor({
    threads: 1,
    providers: {
      scripted: {
        kind: 'module',
        module: path.join(mcpFixtures, 'scripted-provider.ts'),
        options: { steps },
      },
    },
    definitions: [definition()],
    mcpServers: {
      rec: {
        type: 'stdio',
        command: process.execPath,
        args: [path.join(mcpFixtures, 'recording.mjs'), record],
      },
    },
    mcpProjectFile: false,
    permissions: { allow: ['mcp__rec'] },
    cwd: dir,
    ...options,
  });
  cleanups.push(cleanup, () => supervisor.close());
  const outcome = await supervisor.spawn('recorder', { task: 'Store a.' }).result;
  await supervisor.close();
  expect(outcome).toMatchObject({ status: 'completed', answer: 'done' });
  return readFileSync(record, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { _meta?: Record<string, unknown> });
}

describe('trace context on MCP calls', () => {
  it('sends the execute_tool span as _meta.traceparent of tools/call', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const calls = await callOnce({ tracing: { tracer: provider.getTracer('troupe') } });
    const spans = exporter.getFinishedSpans();
    const tool = spans.find((span) => span.name === 'execute_tool mcp__rec__store_secrets');
    expect(tool, spans.map((span) => span.name).join(', ')).toBeDefined();
    const { traceId, spanId } = tool?.spanContext() ?? { traceId: '', spanId: '' };
    expect(calls).toHaveLength(1);
    expect(calls[0]?._meta?.traceparent).toBe(`00-${traceId}-${spanId}-01`);
    expect(calls[0]?._meta).not.toHaveProperty('tracestate');
  }, 60_000);

  it('sends none when the agent is not traced', async () => {
    const calls = await callOnce({ tracing: false });
    expect(calls).toHaveLength(1);
    expect(calls[0]?._meta ?? {}).not.toHaveProperty('traceparent');
  }, 60_000);

  it.skipIf(redisServerPath === undefined)(
    `sends the execute_tool span on the redis engine${skipReason}`,
    async () => {
      const server = await TestRedis.start();
      const queue = uniqueName('q-mcp-trace');
      const workers = [await startWorker(server.url, ['--queue', queue])];
      cleanups.push(
        () => server.destroy(),
        () => killWorkers(workers),
      );
      const exporter = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      const calls = await callOnce({
        backend: 'redis',
        redisUrl: server.url,
        queueName: queue,
        tracing: { tracer: provider.getTracer('troupe') },
      });
      const spans = exporter.getFinishedSpans();
      const tool = spans.find((span) => span.name === 'execute_tool mcp__rec__store_secrets');
      expect(tool, spans.map((span) => span.name).join(', ')).toBeDefined();
      const { traceId, spanId } = tool?.spanContext() ?? { traceId: '', spanId: '' };
      expect(calls).toHaveLength(1);
      expect(calls[0]?._meta?.traceparent).toBe(`00-${traceId}-${spanId}-01`);
    },
    60_000,
  );
});
