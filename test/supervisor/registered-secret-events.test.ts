/**
 * A value the program registers for masking (`registerSecretValues`) in its own thread is masked
 * in what the supervisor tells it and exports of agents that run in other threads, which were
 * never told the value: the model's text, a tool call's arguments and output, span content.
 */
import { fileURLToPath } from 'node:url';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { registerSecretValues } from '../../src/journal/redact.ts';
import type { ScriptedResponse } from '../../src/providers/scripted.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';

const SCRIPTED = fileURLToPath(new URL('../fixtures/mcp/scripted-provider.ts', import.meta.url));
/** Shapeless, and registered only in this test's thread: no pattern masks it. */
const SECRET = 'Ry4uPq8sWm2zLx6cVn0b';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('a secret the program registered', () => {
  it('is masked in agent:text, agent:tool and span content of an agent in a worker thread', async () => {
    registerSecretValues([SECRET]);
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const steps: ScriptedResponse[] = [
      {
        text: `The vault value is ${SECRET}.`,
        toolCalls: [{ name: 'glob', arguments: { pattern: `${SECRET}*` } }],
      },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { found: SECRET } } }] },
    ];
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      tracing: { tracer: provider.getTracer('troupe'), captureContent: true },
    });
    const events: string[] = [];
    for (const name of ['agent:text', 'agent:tool'] as const) {
      supervisor.on(name, (event: unknown) => events.push(`${name} ${JSON.stringify(event)}`));
    }
    const outcome = await supervisor.spawn('worker', { task: 'Find the vault value.' }).result;
    await supervisor.close();
    expect(outcome.status).toBe('completed');
    // Masked, not dropped.
    expect(events.join('\n')).toContain('The vault value is [REDACTED].');
    expect(events.filter((event) => event.includes(SECRET))).toEqual([]);
    const spans = exporter.getFinishedSpans();
    expect(JSON.stringify(spans.map((span) => [span.attributes, span.events]))).toContain('[REDACTED]');
    const leaking = spans.filter((span) => JSON.stringify([span.attributes, span.events]).includes(SECRET));
    expect(leaking.map((span) => span.name)).toEqual([]);
  }, 60_000);
});
