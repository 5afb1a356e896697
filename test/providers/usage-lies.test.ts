/**
 * Usage a server reports is untrusted like the rest of its answer: a negative count would lower an
 * agent's and a whole run's spend (one agent reporting -1e15 tokens let the others pass the run's
 * budget), and a count sent as a string is no count. Such counts are left out, and a usage object
 * with no readable count is no usage at all, so troupe estimates the request as documented.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { TurnEvent } from '../../src/providers/types.ts';
import { collect, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function openAIAnswer(res: ServerResponse, usage: unknown): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`,
  );
  res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

function anthropicAnswer(res: ServerResponse, usage: unknown): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const events = [
    { type: 'message_start', message: { id: 'm', role: 'assistant', content: [], usage } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage },
    { type: 'message_stop' },
  ];
  for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

function usagesOf(events: readonly TurnEvent[]) {
  return events.flatMap((event) => (event.type === 'usage' ? [event.usage] : []));
}

const LIES: readonly [string, unknown][] = [
  ['negative', { prompt_tokens: -1e15, completion_tokens: -5, input_tokens: -1e15, output_tokens: -5 }],
  ['strings', { prompt_tokens: 'NaN', completion_tokens: '1e9', input_tokens: '400000', output_tokens: 'x' }],
  // 1e308 tokens made a run's total Infinity, which "spent" its budget and cancelled every agent.
  ['huge', { prompt_tokens: 1e308, completion_tokens: 2 ** 60, input_tokens: 1e308, output_tokens: 1.5 }],
];

describe('usage a server lies about', () => {
  for (const [name, usage] of LIES) {
    it(`openai: ${name} counts are no usage, so the request counts as unreported`, async () => {
      server = await startServer((_req, res) => openAIAnswer(res, usage));
      const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const events = await collect(provider.turn(turnRequest()));
      const end = terminal(events);
      expect(end.type).toBe('completed');
      expect(usagesOf(events)).toEqual([]);
      expect(end.receipt.requestsWithoutUsage).toBe(1);
    });

    it(`anthropic: ${name} counts are no usage, so the request counts as unreported`, async () => {
      server = await startServer((_req, res) => anthropicAnswer(res, usage));
      const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
      const end = terminal(events);
      expect(end.type).toBe('completed');
      expect(usagesOf(events)).toEqual([]);
      expect(end.receipt.requestsWithoutUsage).toBe(1);
    });
  }

  it('keeps the readable counts of a usage object and leaves a negative one out', async () => {
    server = await startServer((_req, res) =>
      openAIAnswer(res, { prompt_tokens: 12, completion_tokens: -3 }),
    );
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest()));
    expect(usagesOf(events)).toEqual([
      { inputTokens: 12, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
    ]);
    for (const usage of usagesOf(events)) {
      for (const count of Object.values(usage))
        if (typeof count === 'number') expect(count).toBeGreaterThanOrEqual(0);
    }
  });
});
