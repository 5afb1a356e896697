/** Fault handling of the HTTP providers against a local server: retries, resets, bad data, abort. */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider, type OpenAIProviderOptions } from '../../src/providers/openai.ts';
import type { AdmissionTicket, RateLimitInfo, TurnEvent, Usage } from '../../src/providers/types.ts';
import {
  collect,
  corpusFile,
  deferred,
  fakeSleep,
  firstEvents,
  type Handler,
  replay,
  startServer,
  type TestServer,
  terminal,
  textOf,
  turnRequest,
} from './helpers.ts';

const TEXT_RECORDING = 'openai-chat-stream-text.sse';
const FULL_TEXT =
  "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function openai(handler: Handler, options: OpenAIProviderOptions = {}) {
  server = await startServer(handler);
  return {
    server,
    provider: new OpenAIProvider({ baseURL: server.url, apiKey: 'k', random: () => 0, ...options }),
  };
}

const serveText: Handler = (_req, res) => replay(res, corpusFile(TEXT_RECORDING), 'text/event-stream', 5);

function errorOf(events: readonly TurnEvent[]) {
  const end = terminal(events);
  if (end.type !== 'error') throw new Error(`Expected an error, got ${JSON.stringify(end)}`);
  return end;
}

function completedOf(events: readonly TurnEvent[]) {
  const end = terminal(events);
  if (end.type !== 'completed') throw new Error(`Expected completed, got ${JSON.stringify(end)}`);
  return end;
}

describe('retries', () => {
  it('waits for retry-after on a 429, then succeeds', async () => {
    const { sleep, delays } = fakeSleep();
    const limited: [number | undefined, RateLimitInfo][] = [];
    const { server, provider } = await openai(
      (req, res, index) => {
        if (index === 0) {
          res.writeHead(429, { 'retry-after': '2', 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
            }),
          );
          return;
        }
        return serveText(req, res, index);
      },
      { sleep, onRateLimited: (ms, info) => limited.push([ms, info]) },
    );
    const events = await collect(provider.turn(turnRequest()));
    const end = completedOf(events);
    expect(textOf(events)).toBe(FULL_TEXT);
    expect(delays).toEqual([2000]);
    expect(limited).toEqual([[2000, { provider: 'openai', model: 'gpt-4o', status: 429, willRetry: true }]]);
    expect(end.receipt).toMatchObject({ requests: 1, retries: 1, httpStatus: 200 });
    expect(end.receipt.retryLog).toEqual([
      { atMs: expect.any(Number), code: 'rate_limited', status: 429, delayMs: 2000 },
    ]);
    expect(server.received).toHaveLength(2);
  });

  it('prefers retry-after-ms over retry-after', async () => {
    const { sleep, delays } = fakeSleep();
    const { provider } = await openai(
      (req, res, index) => {
        if (index > 0) return serveText(req, res, index);
        res.writeHead(429, { 'retry-after': '3', 'retry-after-ms': '1500' });
        res.end();
      },
      { sleep },
    );
    completedOf(await collect(provider.turn(turnRequest())));
    expect(delays).toEqual([1500]);
  });

  it('retries a 500 twice with exponential backoff, then succeeds', async () => {
    const { sleep, delays } = fakeSleep();
    const { server, provider } = await openai(
      (req, res, index) => {
        if (index < 2) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'The server had an error', type: 'server_error' } }));
          return;
        }
        return serveText(req, res, index);
      },
      { sleep, retryBaseDelayMs: 100 },
    );
    const events = await collect(provider.turn(turnRequest()));
    expect(completedOf(events).receipt).toMatchObject({ requests: 1, retries: 2, httpStatus: 200 });
    expect(
      completedOf(events).receipt.retryLog?.map((retry) => [retry.code, retry.status, retry.delayMs]),
    ).toEqual([
      ['server_error', 500, 100],
      ['server_error', 500, 200],
    ]);
    expect(delays).toEqual([100, 200]);
    expect(server.received.map((request) => request.body)).toEqual(Array(3).fill(server.received[0]?.body));
    // One set of events: failed attempts emitted nothing.
    expect(textOf(events)).toBe(FULL_TEXT);
  });

  it('gives up after maxRetries with a typed server_error carrying status and request id', async () => {
    const { sleep } = fakeSleep();
    const { server, provider } = await openai(
      (_req, res) => {
        res.writeHead(503, { 'x-request-id': 'req_123' });
        res.end('upstream unavailable');
      },
      { sleep, maxRetries: 2 },
    );
    const end = errorOf(await collect(provider.turn(turnRequest())));
    expect(end.error).toMatchObject({
      name: 'ProviderError',
      code: 'server_error',
      fields: { provider: 'openai', status: 503, requestId: 'req_123' },
    });
    expect(end.error.message).toContain('upstream unavailable');
    expect(end.receipt).toMatchObject({ retries: 2, httpStatus: 503 });
    expect(server.received).toHaveLength(3);
  });

  it('exposes retryAfterMs on rate_limited once retries are exhausted', async () => {
    const { sleep } = fakeSleep();
    const limited: (boolean | undefined)[] = [];
    const { provider } = await openai(
      (_req, res) => {
        res.writeHead(429, { 'retry-after-ms': '250' });
        res.end();
      },
      { sleep, maxRetries: 1, onRateLimited: (_ms, info) => limited.push(info.willRetry) },
    );
    const end = errorOf(await collect(provider.turn(turnRequest())));
    expect(end.error).toMatchObject({ code: 'rate_limited', fields: { status: 429, retryAfterMs: 250 } });
    expect(limited).toEqual([true, false]);
  });

  it('does not sleep through a retry-after longer than a minute: it fails at once for the supervisor', async () => {
    const { sleep, delays } = fakeSleep();
    const { server, provider } = await openai(
      (_req, res) => {
        res.writeHead(429, { 'retry-after': '120' });
        res.end();
      },
      { sleep },
    );
    const end = errorOf(await collect(provider.turn(turnRequest())));
    expect(end.error).toMatchObject({ code: 'rate_limited', fields: { retryAfterMs: 120_000 } });
    // It says why it was not retried, instead of reading like any 429.
    expect(end.error.message).toMatch(
      /^openai answered HTTP 429 \(.*\)(: .*)? \(it asked to wait 120 s, longer than the 60 s a request waits: try again later\)$/,
    );
    expect(delays).toEqual([]);
    expect(server.received).toHaveLength(1);
  });

  it('does not retry auth failures or bad requests, and recognises context overflow', async () => {
    const { sleep } = fakeSleep();
    const answers: [number, unknown][] = [
      [
        401,
        {
          error: {
            message: 'Incorrect API key provided',
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        },
      ],
      [
        400,
        {
          error: {
            message: "This model's maximum context length is 128000 tokens.",
            code: 'context_length_exceeded',
          },
        },
      ],
      [400, { error: { message: 'Invalid value for temperature', type: 'invalid_request_error' } }],
    ];
    const { server, provider } = await openai(
      (_req, res, index) => {
        const [status, body] = answers[index] ?? [500, {}];
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      },
      { sleep },
    );
    const codes = [];
    for (let index = 0; index < answers.length; index += 1) {
      codes.push(errorOf(await collect(provider.turn(turnRequest()))).error.code);
    }
    expect(codes).toEqual(['auth_failed', 'context_overflow', 'bad_request']);
    expect(server.received).toHaveLength(3);
  });

  it('retries an error chunk that arrives before any output', async () => {
    const { sleep } = fakeSleep();
    const { server, provider } = await openai(
      (req, res, index) => {
        if (index === 0)
          return replay(res, corpusFile('openai-chat-stream-error-first-chunk.sse'), 'text/event-stream', 1);
        return serveText(req, res, index);
      },
      { sleep },
    );
    const events = await collect(provider.turn(turnRequest()));
    expect(completedOf(events).receipt.retries).toBe(1);
    expect(textOf(events)).toBe(FULL_TEXT);
    expect(server.received).toHaveLength(2);
  });

  it('asks admission before every attempt and releases each slot with its usage', async () => {
    const { sleep } = fakeSleep();
    const log: string[] = [];
    const released: (Usage | undefined)[] = [];
    const { provider } = await openai(
      (req, res, index) => {
        if (index > 0) return serveText(req, res, index);
        res.writeHead(502);
        res.end();
      },
      {
        sleep,
        admission: {
          acquire: async (ticket: AdmissionTicket) => {
            log.push(`acquire ${ticket.provider} ${ticket.model} ${ticket.estimatedInputTokens > 0}`);
            return (usage) => {
              log.push('release');
              released.push(usage);
            };
          },
        },
      },
    );
    completedOf(await collect(provider.turn(turnRequest())));
    expect(log).toEqual(['acquire openai gpt-4o true', 'release', 'acquire openai gpt-4o true', 'release']);
    expect(released).toEqual([
      undefined,
      { inputTokens: 14, outputTokens: 30, cachedInputTokens: 0, reasoningTokens: 0 },
    ]);
  });
});

describe('broken connections and bad data', () => {
  it('retries a connection reset before any byte of the response', async () => {
    const { sleep } = fakeSleep();
    const { server, provider } = await openai(
      (req, res, index) => {
        if (index === 0) {
          req.socket.destroy();
          return;
        }
        return serveText(req, res, index);
      },
      { sleep },
    );
    const events = await collect(provider.turn(turnRequest()));
    expect(completedOf(events).receipt.retries).toBe(1);
    expect(textOf(events)).toBe(FULL_TEXT);
    expect(server.received).toHaveLength(2);
  });

  it('retries a stream whose connection drops after the headers but before any event', async () => {
    const { sleep } = fakeSleep();
    const { provider } = await openai(
      (req, res, index) => {
        if (index > 0) return serveText(req, res, index);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        setImmediate(() => req.socket.destroy());
      },
      { sleep },
    );
    const events = await collect(provider.turn(turnRequest()));
    expect(textOf(events)).toBe(FULL_TEXT);
    expect(completedOf(events).receipt.retries).toBe(1);
  });

  it('ends with an error, and no duplicate events, when the connection resets mid-stream', async () => {
    const { sleep, delays } = fakeSleep();
    const sawText = deferred();
    const { server, provider } = await openai(
      async (req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // The role chunk and three content chunks: "I'm", " unable", " to".
        res.write(firstEvents(corpusFile(TEXT_RECORDING), 4));
        await sawText.promise;
        req.socket.destroy();
      },
      { sleep },
    );
    const events: TurnEvent[] = [];
    for await (const event of provider.turn(turnRequest())) {
      events.push(event);
      if (events.filter((item) => item.type === 'text_delta').length === 3) sawText.resolve();
    }
    expect(events.map((event) => event.type)).toEqual(['text_delta', 'text_delta', 'text_delta', 'error']);
    expect(textOf(events)).toBe("I'm unable to");
    expect(errorOf(events).error).toMatchObject({
      code: 'server_error',
      fields: { provider: 'openai', network: true },
    });
    expect(delays).toEqual([]);
    expect(server.received).toHaveLength(1);
  });

  it('reports a malformed JSON chunk as bad_response without retrying', async () => {
    const { server, provider } = await openai((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: {"choices": [oops\n\n');
    });
    const events = await collect(provider.turn(turnRequest()));
    expect(events.map((event) => event.type)).toEqual(['text_delta', 'error']);
    const end = errorOf(events);
    expect(end.error.code).toBe('bad_response');
    expect(end.error.message).toContain('{"choices": [oops');
    expect(server.received).toHaveLength(1);
  });

  it('reports a stream that stops without a finish reason or [DONE] as bad_response', async () => {
    const { provider } = await openai((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(firstEvents(corpusFile(TEXT_RECORDING), 4));
    });
    const end = errorOf(await collect(provider.turn(turnRequest())));
    expect(end.error).toMatchObject({ code: 'bad_response', fields: { provider: 'openai', status: 200 } });
  });

  it('does not retry an Anthropic error event that follows output', async () => {
    const { sleep, delays } = fakeSleep();
    server = await startServer((_req, res) =>
      replay(res, corpusFile('anthropic-messages-stream-error-midstream.sse'), 'text/event-stream', 3),
    );
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', sleep });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-3-haiku-20240307' })));
    expect(events.map((event) => event.type)).toEqual(['text_delta', 'usage', 'error']);
    expect(delays).toEqual([]);
    expect(server.received).toHaveLength(1);
  });
});

describe('timeouts and cancellation', () => {
  it('times out a server that never answers', async () => {
    const { server, provider } = await openai(() => {});
    const controller = new AbortController();
    const end = errorOf(await collect(provider.turn(turnRequest({ timeoutMs: 200 }), controller.signal)));
    expect(end.error).toMatchObject({
      name: 'ProviderError',
      code: 'timeout',
      fields: { provider: 'openai', timeoutMs: 200 },
    });
    await server.received[0]?.closed;
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('cancels mid-stream: the server sees the connection close and the turn ends with cancelled', async () => {
    const { server, provider } = await openai((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(firstEvents(corpusFile(TEXT_RECORDING), 3));
    });
    const controller = new AbortController();
    const events: TurnEvent[] = [];
    for await (const event of provider.turn(turnRequest(), controller.signal)) {
      events.push(event);
      if (event.type === 'text_delta') controller.abort(new Error('user pressed ctrl-c'));
    }
    const end = errorOf(events);
    expect(end.error).toMatchObject({ code: 'cancelled', fields: { provider: 'openai' } });
    expect(end.error.message).toContain('user pressed ctrl-c');
    await server.received[0]?.closed;
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('cancels while waiting to retry', async () => {
    const controller = new AbortController();
    const { server, provider } = await openai(
      (_req, res) => {
        res.writeHead(429, { 'retry-after': '30' });
        res.end();
      },
      { onRateLimited: () => controller.abort(new Error('shutting down')) },
    );
    const end = errorOf(await collect(provider.turn(turnRequest(), controller.signal)));
    expect(end.error.code).toBe('cancelled');
    expect(server.received).toHaveLength(1);
  });

  it('leaves no abort listener behind after a completed turn', async () => {
    const { provider } = await openai(serveText);
    const controller = new AbortController();
    completedOf(await collect(provider.turn(turnRequest(), controller.signal)));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('ends with cancelled at once when the signal is already aborted, sending nothing', async () => {
    const { server, provider } = await openai(serveText);
    const end = errorOf(await collect(provider.turn(turnRequest(), AbortSignal.abort())));
    expect(end.error.code).toBe('cancelled');
    expect(server.received).toHaveLength(0);
  });
});
