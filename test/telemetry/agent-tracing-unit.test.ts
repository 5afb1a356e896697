import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/providers/types.ts';
import { AgentTracing, MAX_CONTENT_CHARS, MAX_OPEN_TOOL_SPANS } from '../../src/telemetry/agent-tracing.ts';

function setup(captureContent = false) {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
    't',
  );
  const tracing = new AgentTracing({ tracer, captureContent });
  tracing.spawned({
    agentId: 'a',
    parentId: undefined,
    depth: 0,
    agent: 'worker',
    model: 'm',
    provider: 'p',
  });
  const span = (name: string): ReadableSpan => {
    const found = exporter.getFinishedSpans().find((s) => s.name === name);
    if (!found) throw new Error(`no span ${name}: ${exporter.getFinishedSpans().map((s) => s.name)}`);
    return found;
  };
  return { exporter, tracing, span };
}

const receipt: Receipt = {
  provider: 'p',
  model: 'm-2025',
  requests: 1,
  usage: { inputTokens: 100, outputTokens: 7, cachedInputTokens: 40, reasoningTokens: 0 },
  latencyMs: 900,
  httpStatus: 200,
  retries: 2,
  costUsd: 0.001,
  retryLog: [
    { atMs: 10, code: 'rate_limited', status: 429, delayMs: 500 },
    { atMs: 600, code: 'server_error', status: 503, delayMs: 100 },
  ],
  queuedMs: 480,
};

/** Epoch milliseconds as OpenTelemetry's [seconds, nanoseconds]. */
const T0 = Date.UTC(2026, 0, 1);
const hr = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];

describe('AgentTracing', () => {
  it('a chat span runs from the request to its receipt, with usage and each retried attempt as an event at its time', () => {
    const { tracing, span } = setup();
    tracing.event('a', T0 + 1_000, {
      type: 'InferenceSubmitted',
      round: 1,
      step: 1,
      request: 1,
      estimatedTokens: 90,
      tools: 3,
    });
    tracing.event('a', T0 + 2_000, {
      type: 'ProviderReceipt',
      round: 1,
      step: 1,
      receipt,
      stopReason: 'end_turn',
    });
    const chat = span('chat m');
    expect(chat.startTime).toEqual(hr(T0 + 1_000));
    expect(chat.endTime).toEqual(hr(T0 + 2_000));
    expect(chat.attributes).toMatchObject({
      'gen_ai.response.model': 'm-2025',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.usage.cache_read.input_tokens': 40,
      'gen_ai.response.finish_reasons': ['end_turn'],
      'troupe.response.retries': 2,
      'troupe.response.queued_ms': 480,
      'troupe.request.tools': 3,
    });
    expect(
      chat.events.map((e) => [
        e.name,
        e.attributes?.['error.type'],
        e.attributes?.['http.response.status_code'],
        e.time,
      ]),
    ).toEqual([
      ['gen_ai.request.retry', 'rate_limited', 429, hr(T0 + 1_010)],
      ['gen_ai.request.retry', 'server_error', 503, hr(T0 + 1_600)],
    ]);
  });

  it('a restart ends the open request and tool spans with an error and is an event on the agent', () => {
    const { tracing, span } = setup();
    tracing.event('a', 1_000, {
      type: 'InferenceSubmitted',
      round: 1,
      step: 1,
      request: 1,
      estimatedTokens: 1,
      tools: 1,
    });
    tracing.event('a', 1_100, { type: 'ToolCall', round: 1, callId: 'c1', name: 'grep', modelName: 'Grep' });
    tracing.restarted('a', 1, { code: 'thread_crashed', message: 'boom' }, true);
    tracing.ended('a', {
      status: 'completed',
      usage: { inputTokens: 1, outputTokens: 1 },
      costUsd: null,
      rounds: 2,
    });
    expect(span('chat m').status.code).toBe(2);
    expect(span('execute_tool grep').attributes).toMatchObject({
      'error.type': 'thread_crashed',
      'troupe.tool.model_name': 'Grep',
    });
    const agent = span('invoke_agent worker');
    expect(agent.events.map((e) => e.name)).toEqual(['troupe.agent.restarted']);
    expect(agent.attributes['troupe.agent.restarts']).toBe(1);
  });

  it("a chat span carries the request's model settings as GenAI request attributes", () => {
    const { tracing, span } = setup();
    tracing.event('a', 1_000, {
      type: 'InferenceSubmitted',
      round: 1,
      step: 1,
      request: 1,
      estimatedTokens: 1,
      tools: 0,
      modelSettings: { temperature: 0.2, maxOutputTokens: 512, stop: ['END'], reasoningEffort: 'low' },
    });
    tracing.ended('a', {
      status: 'completed',
      usage: { inputTokens: 1, outputTokens: 1 },
      costUsd: null,
      rounds: 1,
    });
    expect(span('chat m').attributes).toMatchObject({
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.max_tokens': 512,
      'gen_ai.request.stop_sequences': ['END'],
    });
  });

  it('content is cut to MAX_CONTENT_CHARS on spans', () => {
    const { tracing, span } = setup(true);
    const long = 'x'.repeat(MAX_CONTENT_CHARS + 10);
    tracing.event('a', 1, {
      type: 'ToolCall',
      round: 1,
      callId: 'c',
      name: 'read_file',
      modelName: 'read_file',
      args: { p: 1 },
    });
    tracing.event('a', 2, {
      type: 'ToolResult',
      callId: 'c',
      name: 'read_file',
      ok: true,
      refused: false,
      projectionAccepted: true,
      text: long,
    });
    const result = span('execute_tool read_file').attributes['gen_ai.tool.call.result'] as string;
    expect(result.startsWith('x'.repeat(MAX_CONTENT_CHARS))).toBe(true);
    expect(result).toContain('[10 more characters in the journal]');
    expect(span('execute_tool read_file').attributes['gen_ai.tool.call.arguments']).toBe('{"p":1}');
  });

  it(`an agent holds at most ${MAX_OPEN_TOOL_SPANS} open tool spans: the oldest ends first`, () => {
    const { tracing, exporter } = setup();
    for (let i = 0; i <= MAX_OPEN_TOOL_SPANS; i += 1)
      tracing.event('a', i, { type: 'ToolCall', round: 1, callId: `c${i}`, name: 't', modelName: 't' });
    const ended = exporter.getFinishedSpans();
    expect(ended.map((s) => s.attributes['gen_ai.tool.call.id'])).toEqual(['c0']);
    expect(ended[0]?.status.message).toBe('no result recorded');
  });

  it("a provider's 429 pause is an event on every traced agent of that provider, not on others", () => {
    const { tracing, span } = setup();
    tracing.spawned({
      agentId: 'b',
      parentId: undefined,
      depth: 0,
      agent: 'other',
      model: 'm',
      provider: 'q',
    });
    tracing.backoff('p', 2_000, T0);
    const outcome = {
      status: 'completed',
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: null,
      rounds: 0,
    } as const;
    tracing.ended('a', outcome);
    tracing.ended('b', outcome);
    const paused = span('invoke_agent worker').events;
    expect(paused.map((e) => [e.name, e.attributes?.['troupe.retry_after_ms']])).toEqual([
      ['troupe.provider.paused', 2_000],
    ]);
    expect(span('invoke_agent other').events).toEqual([]);
  });

  it('an approval decision is an event on the tool call it decided', () => {
    const { tracing, span } = setup();
    tracing.event('a', T0, {
      type: 'ToolCall',
      round: 1,
      callId: 'c9',
      name: 'write_file',
      modelName: 'Write',
    });
    tracing.approvalDecided('a', {
      callId: 'c9',
      tool: 'write_file',
      rule: 'Write',
      approved: false,
      by: 'person',
    });
    tracing.event('a', T0 + 5, {
      type: 'ToolResult',
      callId: 'c9',
      name: 'write_file',
      ok: false,
      refused: true,
      projectionAccepted: true,
    });
    const call = span('execute_tool write_file');
    expect(
      call.events.map((e) => [
        e.name,
        e.attributes?.['troupe.approval.approved'],
        e.attributes?.['troupe.approval.by'],
      ]),
    ).toEqual([['troupe.approval.decided', false, 'person']]);
    expect(call.status.code).toBe(2);
  });

  it('a crash, a restart and a failure put their messages on the span masked: they can quote a key', () => {
    const { tracing, span } = setup();
    const key = 'sk-test-FromAnUncaughtError0123456789';
    const cause = { code: 'thread_crashed', message: `uncaught: OPENAI_API_KEY=${key}` };
    tracing.threadCrashed(0, ['a'], cause);
    tracing.restarted('a', 1, cause, true);
    tracing.ended('a', {
      status: 'failed',
      reason: 'crashed',
      error: { code: 'thread_crashed', message: `restart cap reached: Bearer ${key}` },
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: 0,
      rounds: 0,
    });
    const agent = span('invoke_agent worker');
    expect(agent.events.map((e) => e.attributes?.['exception.message'])).toEqual([
      'uncaught: OPENAI_API_KEY=[REDACTED]',
      'uncaught: OPENAI_API_KEY=[REDACTED]',
    ]);
    expect(agent.status).toEqual({ code: 2, message: 'restart cap reached: Bearer [REDACTED]' });
  });
});
