/** Replays every recorded Anthropic Messages response through a local server, in random chunks. */
import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
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

const recordings = readdirSync(CORPUS_DIR).filter((name) => name.startsWith('anthropic-messages-'));
const SEEDS = [1, 2, 3];

function usageEvents(events: readonly TurnEvent[]) {
  return events.flatMap((event) => (event.type === 'usage' ? [event.usage] : []));
}

function reasoningOf(events: readonly TurnEvent[]): string {
  return events.map((event) => (event.type === 'reasoning_delta' ? event.text : '')).join('');
}

function completed(events: readonly TurnEvent[]) {
  const end = terminal(events);
  if (end.type !== 'completed') throw new Error(`Expected completed, got ${JSON.stringify(end)}`);
  return end;
}

const EXPECTED: Record<string, { readonly model: string; readonly check: (events: TurnEvent[]) => void }> = {
  'anthropic-messages-stream-text.sse': {
    model: 'claude-opus-4-8',
    check: (events) => {
      expect(
        events
          .filter((event) => event.type === 'text_delta')
          .map((event) => event.type === 'text_delta' && event.text),
      ).toEqual(['Hello', ' there', '!']);
      const end = completed(events);
      expect(end).toMatchObject({ text: 'Hello there!', stopReason: 'end_turn' });
      expect(usageEvents(events)).toEqual([
        { inputTokens: 11, outputTokens: 6, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
      // An unknown model has no price.
      expect(end.receipt).toMatchObject({
        provider: 'anthropic',
        model: 'claude-opus-4-8',
        requests: 1,
        costUsd: undefined,
      });
    },
  },
  'anthropic-messages-stream-tool-use.sse': {
    model: 'claude-sonnet-4-5',
    check: (events) => {
      expect(textOf(events)).toBe("I'll check the current weather in Paris for you.");
      expect(toolCallsOf(events)).toEqual([
        {
          type: 'tool_call',
          id: 'toolu_01NRLabsLyVHZPKxbKvkfSMn',
          name: 'get_weather',
          arguments: { location: 'Paris' },
          rawArguments: '{"location": "Paris"}',
        },
      ]);
      expect(completed(events).stopReason).toBe('tool_calls');
      expect(usageEvents(events)).toEqual([
        { inputTokens: 377, outputTokens: 65, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'anthropic-messages-stream-tool-use-empty-input.sse': {
    model: 'claude-sonnet-4-5',
    check: (events) => {
      expect(textOf(events)).toBe("I'll update the issue list for you.");
      expect(toolCallsOf(events)).toEqual([
        {
          type: 'tool_call',
          id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP',
          name: 'updateIssueList',
          arguments: {},
          rawArguments: '',
        },
      ]);
      expect(usageEvents(events)).toEqual([
        { inputTokens: 565, outputTokens: 48, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'anthropic-messages-stream-thinking.sse': {
    model: 'claude-sonnet-4-5-20250929',
    check: (events) => {
      expect(reasoningOf(events)).toBe(
        'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185',
      );
      // The empty final thinking_delta is not emitted.
      expect(events.filter((event) => event.type === 'reasoning_delta')).toHaveLength(9);
      const end = completed(events);
      expect(end).toMatchObject({ text: '925 ÷ 5 = 185', stopReason: 'end_turn' });
      expect(usageEvents(events)).toEqual([
        { inputTokens: 69, outputTokens: 53, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
      expect(end.receipt.costUsd).toBeCloseTo((69 * 3 + 53 * 15) / 1e6, 12);
    },
  },
  'anthropic-messages-stream-max-tokens-partial-json.sse': {
    model: 'claude-sonnet-4-5',
    check: (events) => {
      const end = completed(events);
      expect(end.stopReason).toBe('length');
      expect(end.text).toBe(
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now.",
      );
      // The cut-off make_file call never completed: it is not offered for execution.
      expect(toolCallsOf(events)).toEqual([]);
      expect(usageEvents(events)).toEqual([
        { inputTokens: 450, outputTokens: 124, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
  'anthropic-messages-stream-error-midstream.sse': {
    model: 'claude-3-haiku-20240307',
    check: (events) => {
      // The input count message_start reported is kept, the output marked estimated.
      expect(events.map((event) => event.type)).toEqual(['text_delta', 'usage', 'error']);
      expect(textOf(events)).toBe('Hello');
      const end = terminal(events);
      if (end.type !== 'error') throw new Error('expected an error');
      expect(end.error).toMatchObject({
        name: 'ProviderError',
        code: 'server_error',
        fields: { provider: 'anthropic', status: 200, type: 'overloaded_error' },
      });
      expect(end.error.message).toContain('Overloaded');
    },
  },
  'anthropic-messages-response-text-tool-use.json': {
    model: 'claude-3-opus-20240229',
    check: (events) => {
      expect(textOf(events)).toMatch(/^<thinking>\nThe updateIssueList tool was provided/);
      expect(textOf(events).endsWith('Okay, I will update the current issue list:')).toBe(true);
      expect(toolCallsOf(events)).toEqual([
        {
          type: 'tool_call',
          id: 'toolu_01LRmxn9vGM1d2DZSDBowdZ1',
          name: 'updateIssueList',
          arguments: {},
          rawArguments: '',
        },
      ]);
      expect(usageEvents(events)).toEqual([
        { inputTokens: 602, outputTokens: 93, cachedInputTokens: 0, reasoningTokens: 0 },
      ]);
    },
  },
};

describe('anthropic provider replaying recorded Messages responses', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('has an expectation for every Messages recording in the corpus', () => {
    expect(recordings.length).toBeGreaterThanOrEqual(7);
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
        const provider = new AnthropicProvider({ baseURL: active.url, apiKey: 'test-key', maxRetries: 0 });
        const turn = provider.turn(turnRequest({ model: expected.model }));
        const events = await collect(turn, (call) => {
          turn.stop();
          return `result of ${call.name}`;
        });
        expected.check(events);
        expect(active.received).toHaveLength(1);
        expect(active.received[0]?.url).toBe('/v1/messages');
        expect(active.received[0]?.headers['x-api-key']).toBe('test-key');
        expect(active.received[0]?.headers['anthropic-version']).toBe('2023-06-01');
      });
    }
  }
});
