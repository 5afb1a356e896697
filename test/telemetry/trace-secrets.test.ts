/**
 * A credential a hostile tool echoes (in a result, in a thrown error, in the uncaught error that
 * kills its thread) never leaves the supervisor unmasked: not on a span's attributes, events or
 * status (content on or off), not in the events a program listens to, not in an agent's outcome.
 */
import { fileURLToPath } from 'node:url';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { LEAKED_BEARER, LEAKED_KEY } from '../fixtures/telemetry/leaky-tools.ts';
import { orchestratorDefinition, policySupervisor, tempDir } from '../supervisor/helpers.ts';

const LEAKY_TOOLS = fileURLToPath(new URL('../fixtures/telemetry/leaky-tools.ts', import.meta.url));
const SCRIPTED = fileURLToPath(new URL('../fixtures/mcp/scripted-provider.ts', import.meta.url));
const BEARER_VALUE = LEAKED_BEARER.slice('Bearer '.length);
const leaks = (text: string): boolean => text.includes(LEAKED_KEY) || text.includes(BEARER_VALUE);

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

const spanText = (span: ReadableSpan): string =>
  JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events, status: span.status });

describe('secrets on spans and supervisor events', () => {
  for (const captureContent of [false, true]) {
    it(`a key echoed by a tool result, a thrown error and a thread-killing error is masked everywhere (content ${captureContent ? 'on' : 'off'})`, async () => {
      const exporter = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      supervisor = policySupervisor({
        cwd: tempDir(),
        defaultProvider: 'policy',
        restart: { maxRetries: 1, baseDelayMs: 10, maxDelayMs: 50 },
        toolModules: [{ module: LEAKY_TOOLS, export: 'leakyTools' }],
        tracing: { tracer: provider.getTracer('troupe'), captureContent },
      });
      const emitted: string[] = [];
      for (const name of ['thread:crashed', 'agent:restarted', 'agent:failed', 'agent:tool'] as const) {
        supervisor.on(name, (event: unknown) => emitted.push(`${name} ${JSON.stringify(event)}`));
      }
      const results = await supervisor
        .fanOut([
          { agent: 'worker', task: 'call leak_result' },
          { agent: 'worker', task: 'call leak_throw' },
          { agent: 'worker', task: 'keep calling leak_crash' },
        ])
        .all();
      await supervisor.close();
      // The thread-killing tool crashed its agent past its restart cap; the others completed.
      expect(results.map((r) => r.outcome.status)).toEqual(['completed', 'completed', 'failed']);
      const crashed = results[2]?.outcome;
      expect(crashed?.status === 'failed' ? crashed.reason : undefined).toBe('crashed');
      expect(JSON.stringify(crashed)).toContain('[REDACTED]');
      for (const result of results)
        expect([result.agentId, leaks(JSON.stringify(result))]).toEqual([result.agentId, false]);

      // The crash and the restart really were reported, with the message (masked) that carried the key.
      expect(emitted.some((e) => e.startsWith('thread:crashed') && e.includes('[REDACTED]'))).toBe(true);
      expect(emitted.some((e) => e.startsWith('agent:restarted') && e.includes('[REDACTED]'))).toBe(true);
      for (const event of emitted)
        expect([event.slice(0, 200), leaks(event)]).toEqual([event.slice(0, 200), false]);

      const spans = exporter.getFinishedSpans();
      const agent = spans.find(
        (s) => s.attributes['gen_ai.agent.id'] === results[2]?.agentId && s.name.startsWith('invoke_agent'),
      );
      const events = agent?.events.map((e) => e.name) ?? [];
      expect(events).toEqual(expect.arrayContaining(['troupe.thread.crashed', 'troupe.agent.restarted']));
      expect(agent?.status.code).toBe(2);
      for (const span of spans) expect([span.name, leaks(spanText(span))]).toEqual([span.name, false]);
    }, 60_000);
  }

  it('a tool name the model makes up is masked on spans and in agent:tool; a tool result on spans', async () => {
    // A name of the tool-name alphabet that is also a Stripe key's shape: the model may call anything.
    const key = 'sk_live_0123456789abcdefABCDxyz';
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    supervisor = policySupervisor({
      cwd: tempDir(),
      defaultProvider: 'policy',
      toolModules: [{ module: LEAKY_TOOLS, export: 'leakyTools' }],
      tracing: { tracer: provider.getTracer('troupe'), captureContent: true },
    });
    const tools: string[] = [];
    supervisor.on('agent:tool', (event) => tools.push(JSON.stringify(event)));
    const results = await supervisor
      .fanOut([
        { agent: 'worker', task: `call ${key}` },
        { agent: 'worker', task: 'call leak_result' },
      ])
      .all();
    expect(results.map((r) => r.outcome.status)).toEqual(['completed', 'completed']);
    await supervisor.close();
    expect(tools.some((t) => t.includes('"tool":"[REDACTED]"'))).toBe(true);
    for (const event of tools) expect([event, leaks(event) || event.includes(key)]).toEqual([event, false]);
    const spans = exporter.getFinishedSpans();
    const calls = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
    expect(calls.map((s) => s.name)).toContain('execute_tool [REDACTED]');
    const result = calls.find((s) => s.name === 'execute_tool leak_result');
    expect(result?.attributes['gen_ai.tool.call.result']).toContain('OPENAI_API_KEY=[REDACTED]');
    for (const span of spans) {
      expect([span.name, leaks(spanText(span)) || spanText(span).includes(key)]).toEqual([span.name, false]);
    }
  }, 60_000);

  it('an agent name the model asks spawn_agent for is masked on the span of the agent it could not spawn', async () => {
    const key = 'sk_live_0123456789abcdefABCDxyz';
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: {
        scripted: {
          kind: 'module',
          module: SCRIPTED,
          options: {
            steps: [
              { toolCalls: [{ id: 'c1', name: 'spawn_agent', arguments: { agent: key, task: 'Go.' } }] },
              { toolCalls: [{ id: 'c2', name: 'complete_task', arguments: { result: 'done' } }] },
            ],
          },
        },
      },
      tracing: { tracer: provider.getTracer('troupe') },
    });
    const failed = new Promise<string>((resolve) =>
      supervisor?.on('agent:failed', (event) => {
        if (event.parentId !== undefined && event.outcome.status === 'failed') resolve(event.outcome.reason);
      }),
    );
    const parent = supervisor.spawn(await orchestratorDefinition(), { task: 'Delegate.' });
    expect(await failed).toBe('invalid_request');
    await parent.result;
    await supervisor.close();
    const spans = exporter.getFinishedSpans();
    const child = spans.find((s) => s.attributes['troupe.agent.parent_id'] === parent.id);
    expect([child?.name, child?.attributes['gen_ai.agent.name']]).toEqual([
      'invoke_agent [REDACTED]',
      '[REDACTED]',
    ]);
    for (const span of spans) expect([span.name, spanText(span).includes(key)]).toEqual([span.name, false]);
  }, 60_000);
});
