import path from 'node:path';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { fixtures, orchestratorDefinition, policySupervisor, tempDir } from '../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function memoryTracer(): {
  exporter: InMemorySpanExporter;
  tracer: ReturnType<BasicTracerProvider['getTracer']>;
} {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, tracer: provider.getTracer('troupe') };
}

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan): string => span.spanContext().spanId;
const op = (span: ReadableSpan): unknown => span.attributes['gen_ai.operation.name'];

describe('OpenTelemetry spans of a fan-out', () => {
  it('one trace: workflow > agents > chat and execute_tool; spawned workers under their spawn_agent span; a thread crash is an event', async () => {
    const { exporter, tracer } = memoryTracer();
    supervisor = policySupervisor({
      cwd: tempDir(),
      defaultProvider: 'policy',
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      tracing: { tracer },
    });
    const results = await supervisor
      .fanOut([
        { agent: await orchestratorDefinition(), task: 'Coordinate.' },
        { agent: 'worker', task: 'Use note first, then call crash_exit.' },
      ])
      .all();
    expect(results.map((r) => r.outcome.status)).toEqual(['completed', 'completed']);
    const [orchestratorId, faultyId] = results.map((r) => r.agentId);

    const spans = exporter.getFinishedSpans();
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const workflow = spans.filter((s) => op(s) === 'invoke_workflow');
    expect(workflow).toHaveLength(1);
    expect(workflow[0]?.name).toBe('invoke_workflow fanout');
    expect(parentOf(workflow[0] as ReadableSpan)).toBeUndefined();

    const agents = spans.filter((s) => op(s) === 'invoke_agent');
    expect(agents).toHaveLength(7);
    const agentSpan = (id: string | undefined) => agents.find((s) => s.attributes['gen_ai.agent.id'] === id);
    const orchestrator = agentSpan(orchestratorId) as ReadableSpan;
    const faulty = agentSpan(faultyId) as ReadableSpan;
    expect(orchestrator.name).toBe('invoke_agent orchestrator');
    expect(parentOf(orchestrator)).toBe(idOf(workflow[0] as ReadableSpan));
    expect(parentOf(faulty)).toBe(idOf(workflow[0] as ReadableSpan));
    for (const agent of agents) {
      expect(agent.attributes).toMatchObject({
        'gen_ai.system': 'policy',
        'troupe.agent.status': 'completed',
      });
      expect(typeof agent.attributes['troupe.host_id']).toBe('number');
      expect(agent.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    }

    // Each worker the orchestrator spawned is a child of the execute_tool span of its spawn_agent call.
    const spawnCalls = spans.filter((s) => s.name === 'execute_tool spawn_agent');
    expect(spawnCalls).toHaveLength(5);
    const children = agents.filter((s) => s.attributes['troupe.agent.parent_id'] === orchestratorId);
    expect(children).toHaveLength(5);
    for (const call of spawnCalls) {
      expect(parentOf(call)).toBe(idOf(orchestrator));
      expect(call.attributes['gen_ai.tool.call.id']).toEqual(expect.any(String));
      const child = agentSpan(call.attributes['troupe.tool.child_agent_id'] as string) as ReadableSpan;
      expect(parentOf(child)).toBe(idOf(call));
    }

    // Model requests: a chat span per request, under its agent, with usage and the response model.
    const chats = spans.filter((s) => op(s) === 'chat');
    expect(chats.length).toBeGreaterThanOrEqual(agents.length);
    const agentIds = new Set(agents.map(idOf));
    for (const chat of chats) {
      expect(agentIds.has(parentOf(chat) as string)).toBe(true);
      expect(chat.attributes).toMatchObject({
        'gen_ai.system': 'policy',
        'gen_ai.request.model': expect.any(String),
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
      });
    }
    expect(
      chats.some((c) => (c.attributes['gen_ai.response.finish_reasons'] as string[])?.[0] === 'tool_calls'),
    ).toBe(true);

    // The faulty agent: crash_exit (interrupted by the crash, then run again), then complete_task;
    // the crash and the restart are events on its span. (`note` ran just before the crash: what
    // a dying thread had not yet forwarded is in the journal, not in the trace.)
    const faultyTools = spans.filter((s) => op(s) === 'execute_tool' && parentOf(s) === idOf(faulty));
    const names = faultyTools.map((s) => s.attributes['gen_ai.tool.name']);
    expect(names).toEqual(expect.arrayContaining(['crash_exit', 'complete_task']));
    expect(faultyTools.find((s) => s.attributes['gen_ai.tool.name'] === 'complete_task')?.status.code).toBe(
      0,
    );
    const events = faulty.events.map((e) => e.name);
    expect(events).toContain('troupe.thread.crashed');
    expect(events).toContain('troupe.agent.restarted');
    expect(faulty.attributes['troupe.agent.restarts']).toBeGreaterThanOrEqual(1);

    // Content is off by default: no prompt, argument or result leaves the process.
    for (const span of spans) {
      for (const key of [
        'gen_ai.tool.call.arguments',
        'gen_ai.tool.call.result',
        'gen_ai.system_instructions',
        'troupe.agent.task',
      ]) {
        expect(span.attributes[key]).toBeUndefined();
      }
      expect(span.events.some((e) => e.attributes?.['gen_ai.output.messages'] !== undefined)).toBe(false);
    }
  });

  it('with captureContent, arguments and results are recorded and a secret in a tool result is masked', async () => {
    const { exporter, tracer } = memoryTracer();
    const secret = 'sk-proj-Zx81kLq0aB3cD4eF5gH6iJ7k';
    supervisor = policySupervisor({
      cwd: tempDir(),
      defaultProvider: 'policy',
      hostTools: {
        leak: {
          description: 'Returns a configuration line.',
          parameters: { type: 'object', properties: {} },
          execute: async () => `OPENAI_API_KEY=${secret}`,
        },
      },
      tracing: { tracer, captureContent: true },
    });
    const outcome = await supervisor.spawn('worker', { task: 'call leak' }).result;
    expect(outcome.status).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const leak = spans.find((s) => s.name === 'execute_tool leak') as ReadableSpan;
    expect(leak.attributes['gen_ai.tool.call.arguments']).toBe('{}');
    const result = leak.attributes['gen_ai.tool.call.result'] as string;
    expect(result).toContain('OPENAI_API_KEY=');
    expect(result).not.toContain(secret);
    expect(JSON.stringify(spans.map((s) => [s.attributes, s.events]))).not.toContain(secret);
    const agent = spans.find((s) => op(s) === 'invoke_agent') as ReadableSpan;
    expect(agent.attributes['troupe.agent.task']).toBe('call leak');
    expect(agent.attributes['gen_ai.system_instructions']).toEqual(expect.any(String));
  });
});
