/** Replays every recorded Chat Completions response through a local server, in random chunks. */
import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { TurnEvent } from '../../src/providers/types.ts';
import {
  CORPUS_DIR,
  collect,
  corpusFile,
  replay,
  startServer,
  type TestServer,
  terminal,
  textOf,
  toolCallsOf,
  turnRequest,
} from './helpers.ts';

const CHAT_RECORDING = /^(?:openai-chat|azure-openai-chat|openai-compatible-chat)-/;
const recordings = readdirSync(CORPUS_DIR).filter((name) => CHAT_RECORDING.test(name));
const SEEDS = [1, 2, 3];

type Check = (events: TurnEvent[], model: string) => void;

function usageEvents(events: readonly TurnEvent[]) {
  return events.flatMap((event) => (event.type === 'usage' ? [event.usage] : []));
}

function completed(events: readonly TurnEvent[]) {
  const end = terminal(events);
  if (end.type !== 'completed') throw new Error(`Expected completed, got ${JSON.stringify(end)}`);
  return end;
}

const EXPECTED: Record<string, { readonly model: string; readonly check: Check }> = {
  'openai-chat-stream-text.sse': {
    model: 'gpt-4o-2024-08-06',
    check: (events) => {
      expect(textOf(events)).toBe(
        "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
      );
      expect(events.filter((event) => event.type === 'text_delta')).toHaveLength(30);
      const end = completed(events);
      expect(end.stopReason).toBe('end_turn');
      expect(end.text).toBe(textOf(events));
      expect(usageEvents(events)).toEqual([
        { inputTokens: 14, outputTokens: 30, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
      expect(end.receipt).toMatchObject({ provider: 'openai', requests: 1, httpStatus: 200, retries: 0 });
      expect(end.receipt.costUsd).toBeCloseTo((14 * 2.5 + 30 * 10) / 1e6, 12);
    },
  },
  'openai-chat-stream-text-obfuscation-usage.sse': {
    model: 'gpt-4.1-nano',
    check: (events) => {
      const text = textOf(events);
      expect(text).toHaveLength(1724);
      expect(text.startsWith('**Holiday Name:** Harmony Day')).toBe(true);
      expect(text.endsWith('shared human experiences and mutual respect.')).toBe(true);
      expect(events.filter((event) => event.type === 'text_delta')).toHaveLength(300);
      expect(completed(events).stopReason).toBe('end_turn');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 16, outputTokens: 300, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'openai-chat-stream-tool-call.sse': {
    model: 'gpt-4o',
    check: (events) => {
      expect(textOf(events)).toBe('');
      const calls = toolCallsOf(events);
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({
        id: 'call_c91SqDXlYFuETYv8mUHzz6pp',
        name: 'GetWeatherArgs',
        rawArguments: '{"city":"Edinburgh","country":"UK","units":"c"}',
        arguments: { city: 'Edinburgh', country: 'UK', units: 'c' },
      });
      expect(calls[0]?.parseError).toBeUndefined();
      expect(completed(events).stopReason).toBe('tool_calls');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 76, outputTokens: 24, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'openai-chat-stream-parallel-tool-calls.sse': {
    model: 'gpt-4o',
    check: (events) => {
      expect(toolCallsOf(events).map(({ id, name, arguments: args }) => ({ id, name, args }))).toEqual([
        {
          id: 'call_JMW1whyEaYG438VE1OIflxA2',
          name: 'GetWeatherArgs',
          args: { city: 'Edinburgh', country: 'GB', units: 'c' },
        },
        {
          id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou',
          name: 'get_stock_price',
          args: { ticker: 'AAPL', exchange: 'NASDAQ' },
        },
      ]);
      expect(usageEvents(events)).toEqual([
        { inputTokens: 149, outputTokens: 60, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'openai-chat-stream-finish-length.sse': {
    model: 'gpt-4o',
    check: (events) => {
      const end = completed(events);
      expect(end.stopReason).toBe('length');
      expect(end.text).toBe('{"');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 79, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'openai-chat-stream-multiple-choices.sse': {
    model: 'gpt-4o',
    check: (events) => {
      // Choices 1 and 2 say 61 and 59 degrees; only the first choice is followed.
      expect(textOf(events)).toBe('{"city":"San Francisco","temperature":65,"units":"f"}');
      expect(completed(events).stopReason).toBe('end_turn');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 79, outputTokens: 42, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'openai-chat-stream-error-first-chunk.sse': {
    model: 'gpt-4o',
    check: (events) => {
      const end = terminal(events);
      expect(end.type).toBe('error');
      if (end.type !== 'error') return;
      expect(end.error).toMatchObject({
        name: 'ProviderError',
        code: 'server_error',
        fields: { provider: 'openai', status: 200 },
      });
      expect(end.error.message).toContain('The server had an error processing your request');
      expect(events).toHaveLength(1);
      expect(end.receipt).toMatchObject({ requests: 1, retries: 0, httpStatus: 200 });
    },
  },
  'azure-openai-chat-stream-content-filter.sse': {
    model: 'gpt-5-nano-2025-08-07',
    check: (events) => {
      expect(textOf(events)).toBe('Capital of Denmark.');
      expect(completed(events).stopReason).toBe('end_turn');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 15, outputTokens: 78, cachedInputTokens: 0, reasoningTokens: 64 },
      ]);
    },
  },
  'openai-compatible-chat-stream-tool-call-index-1.sse': {
    model: 'claude-haiku-4-5-20251001',
    check: (events) => {
      expect(textOf(events)).toBe('Reading it.');
      expect(toolCallsOf(events)).toEqual([
        {
          type: 'tool_call',
          id: 'toolu_sanitized',
          name: 'read_file',
          arguments: { path: 'a.txt' },
          rawArguments: '{"path": "a.txt"}',
        },
      ]);
      expect(usageEvents(events)).toEqual([]);
      // No usage chunk: the receipt cannot price the request.
      expect(completed(events).receipt.costUsd).toBeUndefined();
    },
  },
  'openai-chat-response-tool-call.json': {
    model: 'gpt-4o',
    check: (events) => {
      const calls = toolCallsOf(events);
      expect(calls.map((call) => [call.id, call.name])).toEqual([['call_NKpApJybW1MzOjZO2FzwYw0d', 'Query']]);
      expect(calls[0]?.arguments).toMatchObject({
        name: 'May 2022 Fulfilled Orders Not Delivered on Time',
        table_name: 'orders',
      });
      expect(calls[0]?.arguments?.conditions).toHaveLength(4);
      expect(usageEvents(events)).toEqual([
        { inputTokens: 512, outputTokens: 132, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'openai-chat-response-parallel-tool-calls.json': {
    model: 'gpt-4o',
    check: (events) => {
      expect(toolCallsOf(events).map(({ id, name, arguments: args }) => ({ id, name, args }))).toEqual([
        {
          id: 'call_fdNz3vOBKYgOIpMdWotB9MjY',
          name: 'GetWeatherArgs',
          args: { city: 'Edinburgh', country: 'GB', units: 'c' },
        },
        {
          id: 'call_h1DWI1POMJLb0KwIyQHWXD4p',
          name: 'get_stock_price',
          args: { ticker: 'AAPL', exchange: 'NASDAQ' },
        },
      ]);
      expect(textOf(events)).toBe('');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 149, outputTokens: 60, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
};

describe('openai provider replaying recorded Chat Completions responses', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('has an expectation for every Chat Completions recording in the corpus', () => {
    expect(recordings.length).toBeGreaterThanOrEqual(11);
    expect(recordings.filter((name) => EXPECTED[name] === undefined)).toEqual([]);
  });

  for (const name of recordings) {
    for (const seed of SEEDS) {
      it(`parses ${name} delivered in random chunks (seed ${seed})`, async () => {
        const expected = EXPECTED[name];
        if (expected === undefined) throw new Error(`no expectation for ${name}`);
        const contentType = name.endsWith('.json') ? 'application/json' : 'text/event-stream';
        const active = await startServer((_req, res) => replay(res, corpusFile(name), contentType, seed));
        server = active;
        const provider = new OpenAIProvider({ baseURL: active.url, apiKey: 'test-key', maxRetries: 0 });
        const turn = provider.turn(turnRequest({ model: expected.model }));
        const events = await collect(turn, (call) => {
          turn.stop();
          return `result of ${call.name}`;
        });
        expected.check(events, expected.model);
        expect(active.received).toHaveLength(1);
        expect(active.received[0]?.url).toBe('/chat/completions');
        expect(active.received[0]?.headers.authorization).toBe('Bearer test-key');
      });
    }
  }
});
