/** Prices, error classification, retry-after parsing, the SSE reader's end of stream, the factory. */
import { describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { MAX_EVENT_BYTES } from '../../src/providers/constants.ts';
import { createProvider, defaultProviderName } from '../../src/providers/factory.ts';
import { backoffDelay } from '../../src/providers/http.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { costOf, priceFor } from '../../src/providers/pricing.ts';
import { classifyError, endpointOf, parseRetryAfter } from '../../src/providers/provider-error.ts';
import { SimulatedProvider } from '../../src/providers/simulated.ts';
import { readServerSentEvents } from '../../src/providers/sse.ts';

function streamOf(...parts: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(encoder.encode(part));
      controller.close();
    },
  });
}

describe('pricing', () => {
  it('prices dated snapshots at their base model and leaves unknown models unpriced', () => {
    expect(priceFor('gpt-4o-2024-08-06')).toEqual(priceFor('gpt-4o'));
    expect(priceFor('gpt-4o-mini-2024-07-18')).toEqual(priceFor('gpt-4o-mini'));
    expect(priceFor('claude-sonnet-4-5-20250929')).toEqual(priceFor('claude-sonnet-4-5'));
    expect(priceFor('llama3.1:8b')).toBeUndefined();
  });

  it('charges cached input at the cached price', () => {
    const usage = {
      inputTokens: 1_000_000,
      outputTokens: 1_000_000,
      cachedInputTokens: 400_000,
      reasoningTokens: 0,
    };
    expect(costOf(usage, { inputPerMTok: 2, cachedInputPerMTok: 0.5, outputPerMTok: 8 })).toBeCloseTo(
      0.6 * 2 + 0.4 * 0.5 + 8,
      10,
    );
  });
});

describe('errors and retries', () => {
  it('maps statuses and API error types to codes with one classification', () => {
    const byStatus = (status: number, message = '') => classifyError({ status, message });
    expect([401, 403, 429, 408, 409, 500, 529, 404, 422].map((status) => byStatus(status))).toEqual([
      'auth_failed',
      'auth_failed',
      'rate_limited',
      'timeout',
      'server_error',
      'server_error',
      'server_error',
      'bad_request',
      'bad_request',
    ]);
    expect(byStatus(400, 'prompt is too long: 210000 tokens > 200000 maximum')).toBe('context_overflow');
    expect(byStatus(413, 'request_too_large')).toBe('context_overflow');
    expect(classifyError({ type: 'overloaded_error', message: 'Overloaded' })).toBe('server_error');
    expect(classifyError({ type: 'rate_limit_error', message: '' })).toBe('rate_limited');
    expect(classifyError({ type: 'invalid_request_error', message: 'bad tool schema' })).toBe('bad_request');
  });

  it('calls an invalid_api_key auth_failed wherever it appears: code, type, status or stream', () => {
    const message = 'Incorrect API key provided';
    expect(classifyError({ type: 'invalid_request_error', code: 'invalid_api_key', message })).toBe(
      'auth_failed',
    );
    expect(classifyError({ status: 400, code: 'invalid_api_key', message })).toBe('auth_failed');
    expect(classifyError({ status: 401, type: 'invalid_request_error', message })).toBe('auth_failed');
  });

  it('reads retry-after as seconds, as an HTTP date, and retry-after-ms first', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:10 GMT' }), now)).toBe(
      10_000,
    );
    expect(parseRetryAfter(new Headers({ 'retry-after': '9', 'retry-after-ms': '20' }), now)).toBe(20);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });

  it('reads no wait from a retry-after that is not digits, and keeps an absurd one finite', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const wait = (value: string, header = 'retry-after') =>
      parseRetryAfter(new Headers({ [header]: value }), now);
    // Date.parse took `-5` and `+10` for dates in 2001: a wait of 0, retried at once.
    for (const value of ['-5', '+10', '-1', '0x10', '1e3', 'Infinity', 'NaN', '5 Dec']) {
      expect(wait(value), value).toBeUndefined();
      expect(wait(value, 'retry-after-ms'), value).toBeUndefined();
    }
    // 1e23 ms, and a date 270,000 years ahead: waits that must stay finite counts (Infinity was
    // journalled as null, as if the server had asked for none).
    expect(wait('99999999999999999999')).toBe(Number.MAX_SAFE_INTEGER);
    expect(wait(`9${'9'.repeat(400)}`)).toBe(Number.MAX_SAFE_INTEGER);
    expect(Number.isSafeInteger(wait('Fri, 31 Dec 275759 00:00:00 GMT'))).toBe(true);
    expect(wait(' 7 ')).toBe(7000);
  });

  it('shows a URL in messages as its origin and path, without query, fragment or user info', () => {
    expect(endpointOf('https://user:pw@gw.example:8443/v1/chat/completions?key=k#f')).toBe(
      'https://gw.example:8443/v1/chat/completions',
    );
    expect(endpointOf('http://127.0.0.1:8080/v1?api-version=2024/chat/completions')).toBe(
      'http://127.0.0.1:8080/v1',
    );
    expect(endpointOf('not a url?key=k')).toBe('not a url');
    expect(endpointOf('weird://user:pw@host/p?q')).toBe('weird://host/p');
  });

  it('backs off exponentially up to the cap, with up to 25% jitter', () => {
    const policy = { maxRetries: 5, baseDelayMs: 500, maxDelayMs: 3000 };
    expect([0, 1, 2, 3].map((attempt) => backoffDelay(attempt, undefined, policy, () => 0))).toEqual([
      500, 1000, 2000, 3000,
    ]);
    expect(backoffDelay(1, undefined, policy, () => 0.999)).toBe(750);
    expect(backoffDelay(3, 4200, policy, () => 0.5)).toBe(4200);
    // 2^1024 is Infinity, and 0 * Infinity was NaN: a base delay of 0 waits 0 at every attempt.
    const instant = { maxRetries: 1000, baseDelayMs: 0, maxDelayMs: 3000 };
    expect([1023, 1024, 5000].map((attempt) => backoffDelay(attempt, undefined, instant, () => 0.5))).toEqual(
      [0, 0, 0],
    );
  });
});

describe('SSE reader', () => {
  it('delivers a last event that has no closing blank line, and events split across chunks', async () => {
    const events = [];
    const signal = new AbortController().signal;
    for await (const event of readServerSentEvents(
      streamOf('data: {"a"', ':1}\n', '\nevent: x\ndata: [DONE]'),
      { provider: 'p' },
      { signal, received: () => {} },
    )) {
      events.push(event);
    }
    expect(events.map(({ event, data }) => ({ event, data }))).toEqual([
      { event: undefined, data: '{"a":1}' },
      { event: 'x', data: '[DONE]' },
    ]);
  });

  it('decodes a multi-byte character split between chunks', async () => {
    const bytes = new TextEncoder().encode('data: 925 ÷ 5\n\n');
    const split = bytes.indexOf(0xc3) + 1;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, split));
        controller.enqueue(bytes.slice(split));
        controller.close();
      },
    });
    const events = [];
    const reading = { signal: new AbortController().signal, received: () => {} };
    for await (const event of readServerSentEvents(stream, { provider: 'p' }, reading))
      events.push(event.data);
    expect(events).toEqual(['925 ÷ 5']);
  });

  it('does not count keep-alive comments toward the per-event bound', async () => {
    const keepAlive = `: ${'k'.repeat(1021)}\n`;
    const comments = Array.from({ length: MAX_EVENT_BYTES / keepAlive.length + 1024 }, () => keepAlive);
    const events = [];
    const reading = { signal: new AbortController().signal, received: () => {} };
    const stream = streamOf('data: 1\n\n', ...comments, 'data: 2\n\n');
    for await (const event of readServerSentEvents(stream, { provider: 'p' }, reading))
      events.push(event.data);
    expect(events).toEqual(['1', '2']);
  });

  it('still bounds one event whose data lines are interleaved with comments', async () => {
    const line = `data: ${'d'.repeat(1017)}\n: c\n`;
    const lines = Array.from({ length: MAX_EVENT_BYTES / 1024 + 1024 }, () => line);
    const reading = { signal: new AbortController().signal, received: () => {} };
    const read = async () => {
      for await (const _event of readServerSentEvents(streamOf(...lines, '\n'), { provider: 'p' }, reading));
    };
    await expect(read()).rejects.toMatchObject({ code: 'response_too_large' });
  });

  it('counts CRLF and CR line ends once, a CRLF split between chunks included', async () => {
    const reading = { signal: new AbortController().signal, received: () => {} };
    const read = async (parts: string[]) => {
      for await (const _event of readServerSentEvents(streamOf(...parts), { provider: 'p' }, reading));
    };
    const data = `data: ${'d'.repeat(1024 * 1024)}`;
    // Each CR in one chunk and its LF in the next: the LF must not read as a blank line ending
    // the event (which would leave the event unbounded).
    const split = Array.from({ length: 9 }, () => [`${data}\r`, '\n']).flat();
    for (const parts of [split, Array.from({ length: 9 }, () => `${data}\r`)]) {
      await expect(read([...parts, '\r\n'])).rejects.toMatchObject({ code: 'response_too_large' });
    }
  });
});

describe('factory', () => {
  it('builds each provider by name and refuses unknown names', () => {
    expect(createProvider('simulated')).toBeInstanceOf(SimulatedProvider);
    expect(createProvider('openai', { apiKey: 'k' })).toBeInstanceOf(OpenAIProvider);
    expect(createProvider('anthropic', { apiKey: 'k' })).toBeInstanceOf(AnthropicProvider);
    expect(() => createProvider('gemini')).toThrow(expect.objectContaining({ code: 'unknown_provider' }));
    expect(() => createProvider('simulated', { latency: 'fast' })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
  });

  it('defaults to simulated unless a key or an OpenAI base URL is configured', () => {
    expect(defaultProviderName({})).toBe('simulated');
    expect(defaultProviderName({ OPENAI_API_KEY: '  ' })).toBe('simulated');
    expect(defaultProviderName({ OPENAI_API_KEY: 'sk-x' })).toBe('openai');
    expect(defaultProviderName({ OPENAI_BASE_URL: 'http://localhost:11434/v1' })).toBe('openai');
    expect(defaultProviderName({ ANTHROPIC_API_KEY: 'sk-ant' })).toBe('anthropic');
    expect(defaultProviderName({ ANTHROPIC_API_KEY: 'sk-ant', OPENAI_API_KEY: 'sk-x' })).toBe('openai');
  });
});
