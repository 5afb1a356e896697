/**
 * Bounds on what a server sends: response size, streamed output, silence, and error bodies. A
 * hostile or broken server ends its request with a typed error; it never exhausts the process.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { MAX_EVENT_BYTES, MAX_TOOL_CALL_NAME_CHARS } from '../../src/providers/constants.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import {
  collect,
  deferred,
  type Handler,
  startServer,
  type TestServer,
  terminal,
  turnRequest,
} from './helpers.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function openai(handler: Handler, options: ConstructorParameters<typeof OpenAIProvider>[0] = {}) {
  server = await startServer(handler);
  return new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0, ...options });
}

function chunk(delta: Record<string, unknown>): string {
  return `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
}

/**
 * Streams `piece` deltas without end until the client goes away, waiting for the socket to drain
 * (so the flood is as fast as the client reads, and the server itself stays bounded).
 */
function flood(res: ServerResponse, piece: string, sent: { count: number }): void {
  if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream' });
  const write = (): void => {
    while (!res.destroyed) {
      sent.count += 1;
      if (!res.write(piece)) {
        res.once('drain', write);
        return;
      }
    }
  };
  write();
}

describe('response bounds', () => {
  it('cuts off a fast endless text stream with response_too_large, holding a bounded amount of memory', async () => {
    const sent = { count: 0 };
    const delta = chunk({ content: 'x'.repeat(256 * 1024) });
    const provider = await openai((_req, res) => flood(res, delta, sent), { maxOutputChars: 4_000_000 });
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const turn = provider.turn(turnRequest());
    const events = [];
    for await (const event of turn) {
      peak = Math.max(peak, process.memoryUsage().heapUsed);
      events.push(event.type === 'text_delta' ? { type: 'text_delta', text: '' } : event);
    }
    expect(terminal(events as never)).toMatchObject({
      type: 'error',
      error: { code: 'response_too_large', fields: { maxOutputChars: 4_000_000 } },
    });
    // The documented bound: the request holds at most maxOutputChars of output (8 MB as UTF-16)
    // plus one event; 256 MiB of headroom covers the garbage collector's lag.
    expect(peak - before).toBeLessThan(256 * 1024 * 1024);
    await server?.received[0]?.closed;
  });

  it('counts tool-call argument fragments toward the output bound', async () => {
    const sent = { count: 0 };
    const provider = await openai(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: '' } }] }));
        flood(res, chunk({ tool_calls: [{ index: 0, function: { arguments: 'a'.repeat(65_536) } }] }), sent);
      },
      { maxOutputChars: 1_000_000 },
    );
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({ type: 'error', error: { code: 'response_too_large' } });
  });

  it('ends a response larger than maxResponseBytes with response_too_large, whatever it carries', async () => {
    const sent = { count: 0 };
    // Comments are framing, not output: only the byte bound can stop them.
    const provider = await openai((_req, res) => flood(res, `: ${'z'.repeat(64 * 1024)}\n\n`, sent), {
      maxResponseBytes: 2 * 1024 * 1024,
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({
      type: 'error',
      error: { code: 'response_too_large', fields: { maxResponseBytes: 2 * 1024 * 1024 } },
    });
  });

  // Before, a comment's colon and line end still counted toward the 8 MiB event bound: four
  // million bare `:` keep-alives (a proxy's heartbeat) between two chunks failed the answer.
  it('does not count bare keep-alive comment lines toward the per-event bound, LF or CRLF', async () => {
    const comments = Buffer.from(':\n:\r\n'.repeat(Math.ceil((MAX_EVENT_BYTES + 1024 * 1024) / 5)));
    const provider = await openai(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ content: 'Hel' }));
      // In pieces, so the client reads them as several chunks.
      for (let offset = 0; offset < comments.length; offset += 1024 * 1024) {
        res.write(comments.subarray(offset, offset + 1024 * 1024));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const last = { choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] };
      res.end(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({ type: 'completed', text: 'Hello' });
  });

  it('still bounds one comment line that never ends, which the parser holds whole', async () => {
    const provider = await openai(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ content: 'Hel' }));
      const piece = ':'.repeat(1024 * 1024);
      for (let sent = 0; sent <= MAX_EVENT_BYTES && !res.destroyed; sent += piece.length) {
        res.write(piece);
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end('\n\n');
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({
      type: 'error',
      error: { code: 'response_too_large', fields: { maxEventBytes: MAX_EVENT_BYTES } },
    });
  });

  it('ends a stream that stalls with timeout after idleTimeoutMs, and the server sees the connection close', async () => {
    const stalled = deferred();
    const provider = await openai(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk({ content: 'Hel' }));
        stalled.resolve();
      },
      { idleTimeoutMs: 200 },
    );
    const events = await collect(provider.turn(turnRequest()));
    await stalled.promise;
    expect(terminal(events)).toMatchObject({
      type: 'error',
      error: { code: 'timeout', fields: { idleTimeoutMs: 200, provider: 'openai' } },
    });
    await server?.received[0]?.closed;
  });

  it('times out a server that never sends its headers after idleTimeoutMs, not after timeoutMs', async () => {
    const provider = await openai(() => undefined, { idleTimeoutMs: 150, timeoutMs: 600_000 });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({ type: 'error', error: { code: 'timeout', fields: { idleTimeoutMs: 150 } } });
  });

  it('bounds a fast flood by the request timeout even while data keeps arriving', async () => {
    const sent = { count: 0 };
    // Tiny deltas keep the idle timer happy and stay far below the output bound.
    const provider = await openai((_req, res) => flood(res, chunk({ content: 'x' }), sent), {
      timeoutMs: 300,
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({ type: 'error', error: { code: 'timeout', fields: { timeoutMs: 300 } } });
    await server?.received[0]?.closed;
  });

  it('keeps at most a short excerpt of a 5 MB error body', async () => {
    const provider = await openai((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('E'.repeat(5 * 1024 * 1024));
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({ type: 'error', error: { code: 'server_error', fields: { status: 500 } } });
    if (end.type !== 'error') throw new Error('expected an error');
    expect(end.error.message.length).toBeLessThan(1_000);
    expect(end.error.message).toContain('(cut)');
  });

  it('keeps at most a short excerpt of a huge JSON error message', async () => {
    const provider = await openai((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'M'.repeat(100_000), type: 'invalid_request_error' } }));
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    if (end.type !== 'error') throw new Error('expected an error');
    expect(end.error.code).toBe('bad_request');
    expect(end.error.message.length).toBeLessThan(1_000);
  });

  it('bounds the Anthropic stream the same way', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: 3 } } })}\n\n`,
      );
      res.write(
        `event: content_block_start\ndata: ${JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })}\n\n`,
      );
      const delta = `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'y'.repeat(128 * 1024) } })}\n\n`;
      flood(res, delta, { count: 0 });
    });
    const provider = new AnthropicProvider({
      baseURL: server.url,
      apiKey: 'k',
      maxRetries: 0,
      maxOutputChars: 1_000_000,
    });
    const end = terminal(await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-5' }))));
    expect(end).toMatchObject({ type: 'error', error: { code: 'response_too_large' } });
  });

  // The API starts every block empty; a proxy (or a replayed non-streamed body) may not. Before,
  // content in a start event was never counted: 4 such events of 7 MB made a 28 MB answer.
  it('bounds the content an Anthropic block start holds, streamed or in a JSON body, and streams its text', async () => {
    const event = (value: Record<string, unknown>): string =>
      `event: ${String(value.type)}\ndata: ${JSON.stringify(value)}\n\n`;
    const startsWith =
      (block: Record<string, unknown>): Handler =>
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(event({ type: 'message_start', message: { usage: { input_tokens: 3 } } }));
        res.write(event({ type: 'content_block_start', index: 0, content_block: block }));
        res.write(event({ type: 'content_block_stop', index: 0 }));
        res.write(
          event({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } }),
        );
        res.end(event({ type: 'message_stop' }));
      };
    const big = 'z'.repeat(60_000);
    const answers: Record<string, Handler> = {
      text: startsWith({ type: 'text', text: big }),
      thinking: startsWith({ type: 'thinking', thinking: big, signature: 's' }),
      'tool input': startsWith({ type: 'tool_use', id: 't1', name: 'read_file', input: { path: big } }),
      'tool input in a JSON body': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const content = [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: big } }];
        res.end(
          JSON.stringify({ content, stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 4 } }),
        );
      },
    };
    for (const [name, handler] of Object.entries(answers)) {
      server = await startServer(handler);
      const provider = new AnthropicProvider({
        baseURL: server.url,
        apiKey: 'k',
        maxRetries: 0,
        maxOutputChars: 50_000,
      });
      const end = terminal(
        await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-5' })), () => 'ok'),
      );
      expect(end, name).toMatchObject({ type: 'error', error: { code: 'response_too_large' } });
      await server.close();
      server = undefined;
    }
    // Within the bound, a start's text reaches the consumer like a delta's, not only the response.
    server = await startServer(startsWith({ type: 'text', text: 'hello' }));
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-5' })));
    expect(events.filter((e) => e.type === 'text_delta')).toEqual([{ type: 'text_delta', text: 'hello' }]);
    expect(terminal(events)).toMatchObject({ type: 'completed', text: 'hello' });
  });

  // Names and ids do not count toward maxOutputChars: 30 calls named with 1 MB each made a 120 MB
  // journal and a 30M-token input before the context budget ended the agent.
  it('refuses a tool call whose name or id is longer than MAX_TOOL_CALL_NAME_CHARS', async () => {
    const long = 'n'.repeat(MAX_TOOL_CALL_NAME_CHARS + 1);
    const calls = {
      name: { index: 0, id: 'c1', type: 'function', function: { name: long, arguments: '{}' } },
      id: { index: 0, id: long, type: 'function', function: { name: 'read_file', arguments: '{}' } },
    };
    for (const [what, call] of Object.entries(calls)) {
      const provider = await openai((_req, res, index) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const delta = index === 0 ? { tool_calls: [call] } : { content: 'done' };
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: 'stop' }] })}\n\n`);
        res.end('data: [DONE]\n\n');
      });
      const events = await collect(provider.turn(turnRequest()), () => 'ok');
      expect(
        events.some((event) => event.type === 'tool_call'),
        what,
      ).toBe(false);
      const end = terminal(events);
      expect(end, what).toMatchObject({
        type: 'error',
        error: {
          code: 'response_too_large',
          message: expect.stringContaining(
            `tool call whose ${what} is ${MAX_TOOL_CALL_NAME_CHARS + 1} characters long`,
          ),
          fields: { maxToolCallNameChars: MAX_TOOL_CALL_NAME_CHARS },
        },
      });
      if (end.type === 'error') expect(end.error.message.length, what).toBeLessThan(500);
      await server?.close();
      server = undefined;
    }
    // At the bound, the call is run.
    const name = 'n'.repeat(MAX_TOOL_CALL_NAME_CHARS);
    const provider = await openai((_req, res, index) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const delta =
        index === 0
          ? { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name, arguments: '{}' } }] }
          : { content: 'done' };
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    const events = await collect(provider.turn(turnRequest()), () => 'ok');
    expect(events.filter((event) => event.type === 'tool_call')).toHaveLength(1);
    expect(terminal(events)).toMatchObject({ type: 'completed', text: 'done' });
  });

  it('rejects bound options that are not positive numbers', () => {
    for (const option of ['idleTimeoutMs', 'maxResponseBytes', 'maxOutputChars'] as const) {
      expect(() => new OpenAIProvider({ baseURL: 'http://127.0.0.1:9', [option]: 0 })).toThrow(
        expect.objectContaining({ code: 'invalid_option', fields: expect.objectContaining({ option }) }),
      );
    }
  });
});
