/**
 * Spans a tool makes while it runs (an MCP request, web_fetch's HTTP request, a host tool's own
 * work) are children of the call's `execute_tool` span, as the GenAI semantic conventions nest
 * them, not of the agent's `invoke_agent` span: for a tool in the agent's thread and for a host
 * tool on the supervisor.
 */
import { fileURLToPath } from 'node:url';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ScriptedResponse } from '../../src/providers/scripted.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { AgentTracing } from '../../src/telemetry/agent-tracing.ts';
import { tempDir } from '../supervisor/helpers.ts';

const SCRIPTED = fileURLToPath(new URL('../fixtures/mcp/scripted-provider.ts', import.meta.url));
const SPAN_TOOLS = fileURLToPath(new URL('../fixtures/telemetry/span-tools.ts', import.meta.url));

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  vi.restoreAllMocks();
  // What register() set globally in this process.
  trace.disable();
  context.disable();
  propagation.disable();
});

describe('the spans of a tool', () => {
  it('are children of its execute_tool span, in the agent thread and on the supervisor', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    // A context manager, as an application's SDK registers one: host tools run in this process.
    provider.register();
    const tracer = provider.getTracer('test');
    const steps: ScriptedResponse[] = [
      {
        toolCalls: [
          { id: 'in-thread', name: 'traced_work', arguments: {} },
          { id: 'on-host', name: 'host_work', arguments: {} },
        ],
      },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { done: true } } }] },
    ];
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      toolModules: [{ module: SPAN_TOOLS, export: 'spanTools' }],
      hostTools: {
        host_work: {
          description: 'Does some traced work on the supervisor.',
          parameters: { type: 'object', properties: {}, additionalProperties: true },
          readOnly: true,
          execute: () => {
            tracer.startSpan('host work').end();
            return 'done';
          },
        },
      },
      // Content on: the tool's result (its span's ids) is on its execute_tool span.
      tracing: { tracer, captureContent: true },
    });
    const handle = supervisor.spawn('worker', { task: 'Do the work.' });
    const outcome = await handle.result;
    expect(outcome.status).toBe('completed');
    await supervisor.close();

    const spans = exporter.getFinishedSpans();
    const agent = spans.find((span) => span.name === 'invoke_agent worker');
    const toolSpan = (callId: string) =>
      spans.find(
        (span) => span.name.startsWith('execute_tool') && span.attributes['gen_ai.tool.call.id'] === callId,
      );
    const inThread = toolSpan('in-thread');
    const onHost = toolSpan('on-host');
    expect([agent, inThread, onHost].map((span) => span === undefined)).toEqual([false, false, false]);
    // The execute_tool spans stay the agent's children.
    expect(inThread?.parentSpanContext?.spanId).toBe(agent?.spanContext().spanId);
    expect(onHost?.parentSpanContext?.spanId).toBe(agent?.spanContext().spanId);

    // The tool's span, exported in the agent's thread, says who its parent is.
    const result = inThread?.attributes['gen_ai.tool.call.result'];
    expect(JSON.parse(typeof result === 'string' ? result : '{}')).toEqual({
      traceId: agent?.spanContext().traceId,
      parent: inThread?.spanContext().spanId,
    });
    const hostWork = spans.find((span) => span.name === 'host work');
    expect(hostWork?.spanContext().traceId).toBe(agent?.spanContext().traceId);
    expect(hostWork?.parentSpanContext?.spanId).toBe(onHost?.spanContext().spanId);
  }, 60_000);

  it('are not asked for from a thread with no SDK: nothing there could read them', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const asked = vi.spyOn(AgentTracing.prototype, 'toolSpan');
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ id: 'plain', name: 'list_dir', arguments: { path: '.' } }] },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { done: true } } }] },
    ];
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      tracing: { tracer: provider.getTracer('test') },
    });
    expect((await supervisor.spawn('worker', { task: 'List it.' }).result).status).toBe('completed');
    await supervisor.close();
    // The call still has its span, made from the events the thread forwards.
    const spans = exporter.getFinishedSpans();
    expect(spans.filter((span) => span.attributes['gen_ai.tool.call.id'] === 'plain')).toHaveLength(1);
    expect(asked).not.toHaveBeenCalled();
  }, 60_000);
});
