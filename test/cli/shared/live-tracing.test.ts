/**
 * `troupe run --otlp`: when the session itself throws (its journal cannot be written), the agent's
 * span still ends, failed with the reason masked, so it is exported instead of lost.
 */
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import { executeLive } from '../../../src/cli/shared/live.ts';
import type { PreparedSession, SessionInfo } from '../../../src/cli/shared/session.ts';
import { SystemError } from '../../../src/errors.ts';
import { captureIO } from '../../run-dir/helpers.ts';

const KEY = 'sk-liveTrace4Qp7ZtK2vN9xRb5cYh3sLd8';

const info = {
  command: 'run',
  agentId: 'agent-live-1',
  agent: 'worker',
  definitionPath: undefined,
  provider: 'simulated',
  simulated: true,
  providerNotice: 'provider: simulated',
  model: 'sim-1',
  journal: '/nonexistent/journal.jsonl',
  cwd: '/nonexistent',
  task: 'do it',
} as SessionInfo;

describe('executeLive with tracing', () => {
  it('ends the agent span, failed, when the session throws', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
      't',
    );
    const session: PreparedSession = {
      info,
      execute: () =>
        Promise.reject(new SystemError('journal_write_failed', `ENOSPC writing the journal (key ${KEY})`)),
      close: () => {},
    };
    const io = captureIO();
    await expect(executeLive(session, io, { json: true, tracing: { tracer } })).rejects.toThrow('ENOSPC');

    const spans = exporter.getFinishedSpans();
    expect(spans.map((span) => span.name)).toEqual(['invoke_agent worker']);
    const [span] = spans;
    expect(span?.status.code).toBe(2); // SpanStatusCode.ERROR
    expect(span?.status.message).toBe('ENOSPC writing the journal (key [REDACTED])');
    expect(span?.attributes['error.type']).toBe('journal_write_failed');
  });
});
