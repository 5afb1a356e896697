/**
 * Usage a server reported before its stream broke is kept: Anthropic's `message_start` carries the
 * input count, and a connection reset or a bad event after it used to throw it away (the whole
 * request was then estimated). The reported input stays, the output is marked estimated, and a
 * retried request counts the input of both attempts.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { TurnEvent } from '../../src/providers/types.ts';
import { collect, fakeSleep, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function sse(res: ServerResponse, events: readonly Record<string, unknown>[]): void {
  for (const event of events) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
}

const start = (input: number) => ({
  type: 'message_start',
  message: { id: 'm', role: 'assistant', content: [], usage: { input_tokens: input, output_tokens: 1 } },
});

function fullAnswer(res: ServerResponse, input: number): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  sse(res, [
    start(input),
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
    { type: 'message_stop' },
  ]);
  res.end();
}

const usages = (events: readonly TurnEvent[]) =>
  events.flatMap((event) => (event.type === 'usage' ? [event.usage] : []));

describe('usage reported before a stream fails', () => {
  it('anthropic: a bad event after message_start keeps the reported input, output estimated', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, [
        start(1234),
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'partial answer' } },
      ]);
      res.end('event: content_block_delta\ndata: {not json\n\n');
    });
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
    const end = terminal(events);
    expect(end.type).toBe('error');
    if (end.type !== 'error') return;
    const expected = {
      inputTokens: 1234,
      outputTokens: expect.any(Number),
      estimated: true,
      estimatedSide: 'output',
    };
    expect(usages(events)).toEqual([expect.objectContaining(expected)]);
    expect(end.request?.usage).toMatchObject(expected);
    expect(end.request?.requestsWithoutUsage).toBe(0);
    expect(end.receipt.usage).toMatchObject(expected);
    expect(end.receipt.usage.outputTokens).toBeGreaterThanOrEqual(1);
  });

  it('anthropic: an input in message_start that the request could not hold is not kept when the stream breaks', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, [start(5_000_000)]);
      res.end('event: content_block_delta\ndata: {not json\n\n');
    });
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
    const end = terminal(events);
    expect(end.type).toBe('error');
    if (end.type !== 'error') return;
    expect(usages(events)).toEqual([]);
    expect(end.request?.requestsWithoutUsage).toBe(1);
    expect(end.receipt.usage.inputTokens).toBe(0);
  });

  it('anthropic: a connection reset after message_start is retried, and both attempts count', async () => {
    const { sleep, delays } = fakeSleep();
    server = await startServer((_req, res, index) => {
      if (index > 0) return fullAnswer(res, 1000);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, [start(1000)]);
      setImmediate(() => res.destroy());
    });
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 2, sleep });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
    const end = terminal(events);
    expect(end.type).toBe('completed');
    expect(delays).toHaveLength(1);
    expect(end.receipt).toMatchObject({ requests: 1, retries: 1, requestsWithoutUsage: 0 });
    // The failed attempt's input was processed (and billed) as well as the retry's.
    expect(end.receipt.usage).toMatchObject({
      inputTokens: 2000,
      outputTokens: 6,
      estimated: true,
      estimatedSide: 'output',
    });
  });

  it('openai: usage sent after the output, before the stream ends early, is kept as reported', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' } }] })}\n\n`);
      res.write(
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 321, completion_tokens: 2 } })}\n\n`,
      );
      res.end('data: {not json\n\n');
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest()));
    const end = terminal(events);
    expect(end.type).toBe('error');
    if (end.type !== 'error') return;
    // The usage chunk came after all the output: its count is the server's of all of it.
    expect(end.request?.usage).toEqual({
      inputTokens: 321,
      outputTokens: 2,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    expect(end.request?.requestsWithoutUsage).toBe(0);
  });

  it('openai: usage sent before more output, then the stream ends early, has its output estimated', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' } }], usage: { prompt_tokens: 321, completion_tokens: 2 } })}\n\n`,
      );
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: ' there' } }] })}\n\n`);
      res.end('data: {not json\n\n');
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end.type).toBe('error');
    if (end.type !== 'error') return;
    expect(end.request?.usage).toMatchObject({
      inputTokens: 321,
      estimated: true,
      estimatedSide: 'output',
    });
  });

  it('the count a broken stream reported is no field of its public usage', async () => {
    // What the server had counted is the floor of the loop's own count (test/loop/
    // cut-response-usage.test.ts), kept inside troupe: the usage events, receipts, journal and
    // `--json` events all show the same public fields.
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' } }], usage: { prompt_tokens: 321, completion_tokens: 2 } })}\n\n`,
      );
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: ' there' } }] })}\n\n`);
      res.end('data: {not json\n\n');
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest()));
    const end = terminal(events);
    if (end.type !== 'error') throw new Error(`expected an error, got ${end.type}`);
    const keys = [
      'cachedInputTokens',
      'estimated',
      'estimatedSide',
      'inputTokens',
      'outputTokens',
      'reasoningTokens',
    ];
    for (const usage of [...usages(events), end.request?.usage, end.receipt.usage])
      expect(Object.keys(usage ?? {}).sort()).toEqual(keys);
  });
});
