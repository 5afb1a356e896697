/**
 * One classification of provider failures for streaming and non-streaming answers, with the
 * server's own message and the request URL kept.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { collect, type Handler, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function openai(handler: Handler, stream = true) {
  server = await startServer(handler);
  return new OpenAIProvider({ baseURL: `${server.url}/v1`, apiKey: 'k', maxRetries: 0, stream });
}

function json(status: number, body: unknown): Handler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

function sse(...events: string[]): Handler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(events.map((data) => `data: ${data}\n\n`).join(''));
  };
}

async function errorOf(provider: OpenAIProvider | AnthropicProvider) {
  const end = terminal(await collect(provider.turn(turnRequest())));
  if (end.type !== 'error') throw new Error(`expected an error, got ${JSON.stringify(end)}`);
  return end.error;
}

describe('provider error classification', () => {
  it.each([
    ['a non-streaming {}', json(200, {}), false],
    ['a non-streaming {"choices": []}', json(200, { choices: [] }), false],
    ['a streamed {} then [DONE]', sse('{}', '[DONE]'), true],
    ['a streamed {"choices": []} then [DONE]', sse('{"choices":[]}', '[DONE]'), true],
  ])('calls %s the server’s bad_response, not the model’s empty answer', async (_name, handler, stream) => {
    const error = await errorOf(await openai(handler, stream));
    expect(error).toMatchObject({ code: 'bad_response', name: 'ProviderError' });
    expect(error.message).toContain('no choices');
  });

  it('reduces a proxy’s HTML error page to its text', async () => {
    const provider = await openai((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end(
        '<!DOCTYPE html><html><head><style>h1{}</style></head><body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>',
      );
    });
    const error = await errorOf(provider);
    expect(error.message).toMatch(/answered HTTP 502 \(.*\): 502 Bad Gateway nginx$/);
  });

  it('keeps the URL and the server’s text for a base URL that misses /v1', async () => {
    server = await startServer((req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`404 page not found: ${req.url ?? ''}`);
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const error = await errorOf(provider);
    expect(error).toMatchObject({
      code: 'bad_request',
      fields: { status: 404, url: `${server.url}/chat/completions` },
    });
    expect(error.message).toBe(
      `openai answered HTTP 404 (${server.url}/chat/completions): 404 page not found: /chat/completions`,
    );
  });

  it.each([
    ['error.message', { error: { message: 'model "x" not found', type: 'invalid_request_error' } }],
    ['a string error', { error: 'model "x" not found' }],
    ['a top-level message', { object: 'error', message: 'model "x" not found', code: 404 }],
    ['a FastAPI detail', { detail: 'model "x" not found' }],
  ])('keeps the server’s own message from %s', async (_name, body) => {
    const error = await errorOf(await openai(json(404, body)));
    expect(error.code).toBe('bad_request');
    expect(error.message).toContain(': model "x" not found');
  });

  it('calls an in-stream invalid_api_key auth_failed, as the same error as an HTTP body', async () => {
    const payload = {
      error: {
        message: 'Incorrect API key provided',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      },
    };
    const inStream = await errorOf(await openai(sse(JSON.stringify(payload))));
    await server?.close();
    const asBody = await errorOf(await openai(json(400, payload)));
    expect(inStream).toMatchObject({ code: 'auth_failed', fields: { apiCode: 'invalid_api_key' } });
    expect(asBody).toMatchObject({
      code: 'auth_failed',
      fields: { apiCode: 'invalid_api_key', status: 400 },
    });
    expect(inStream.message).toContain('Incorrect API key provided');
  });

  it('calls an Anthropic body without a message bad_response, streaming or not', async () => {
    for (const stream of [false, true]) {
      server = await startServer(stream ? sse(JSON.stringify({ type: 'ping' })) : json(200, { id: 'msg_1' }));
      const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0, stream });
      expect(await errorOf(provider)).toMatchObject({ code: 'bad_response' });
      await server.close();
      server = undefined;
    }
  });

  for (const name of ['openai', 'anthropic'] as const) {
    async function provider(handler: Handler) {
      server = await startServer(handler);
      const options = { baseURL: server.url, apiKey: 'k', maxRetries: 0 };
      return name === 'openai' ? new OpenAIProvider(options) : new AnthropicProvider(options);
    }

    it(`${name}: refuses a 200 HTML page at once, naming the URL, the content type and its text`, async () => {
      const error = await errorOf(
        await provider((_req, res) => {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end(
            '<!DOCTYPE html><html><body><h1>Sign in</h1><p>to continue to the portal</p></body></html>',
          );
        }),
      );
      const url = server?.received[0]?.url ?? '';
      expect(error).toMatchObject({
        code: 'bad_response',
        fields: { status: 200, contentType: 'text/html; charset=utf-8', url: `${server?.url}${url}` },
      });
      expect(error.message).toBe(
        `${name} answered HTTP 200 with content-type text/html; charset=utf-8 (${server?.url}${url}), expected an event stream or JSON (is the base URL the API's?): Sign in to continue to the portal`,
      );
    });

    // Read as a stream (no content type), a login page only said "The stream ended before the
    // model finished", with neither the URL nor what the server sent.
    it(`${name}: quotes a 200 page sent without a content type, which holds no server-sent event`, async () => {
      const error = await errorOf(
        await provider((_req, res) => {
          res.writeHead(200);
          res.end('<html><body><h1>Sign in</h1><p>to continue</p></body></html>');
        }),
      );
      const url = server?.received[0]?.url ?? '';
      expect(error).toMatchObject({
        code: 'bad_response',
        fields: { status: 200, url: `${server?.url}${url}` },
      });
      expect(error.message).toBe(
        `${name} answered HTTP 200 (${server?.url}${url}) with a body that holds no server-sent event (is the base URL the API's?): Sign in to continue`,
      );
    });

    it(`${name}: still calls an empty body, or one of keep-alive comments only, a stream that ended early`, async () => {
      for (const body of ['', ': ping\n\n: ping\n\n']) {
        const error = await errorOf(
          await provider((_req, res) => {
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            res.end(body);
          }),
        );
        expect(error.code).toBe('bad_response');
        expect(error.message).not.toContain('no server-sent event');
        await server?.close();
        server = undefined;
      }
    });

    // The CLI prints only the message: it said "The stream ended before message_stop." with
    // neither the provider nor the server, so a wrong base URL or a broken proxy was a guess.
    it(`${name}: names the provider and the URL, never its query, when a stream ends early or breaks its protocol`, async () => {
      const first =
        name === 'openai'
          ? `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Hel' } }] })}\n\n`
          : `data: ${JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: 3 } } })}\n\n`;
      const path = name === 'openai' ? 'chat/completions' : 'v1/messages';
      const broken: Record<string, [string, string]> = {
        'ended early': [
          '',
          name === 'openai' ? 'ended before the model finished' : 'ended before message_stop',
        ],
        'not JSON': ['data: {"oops\n\n', 'whose data is not JSON'],
        'an error object': ['data: 17\n\n', 'Expected a JSON object'],
      };
      for (const [what, [rest, says]] of Object.entries(broken)) {
        server = await startServer((_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(first + rest);
        });
        const base = `${server.url}/gateway`;
        const options = { baseURL: `${base}?deployment=blue-7#frag`, apiKey: 'k', maxRetries: 0 };
        const error = await errorOf(
          name === 'openai' ? new OpenAIProvider(options) : new AnthropicProvider(options),
        );
        expect(error.code, what).toBe('bad_response');
        expect(error.message, what).toContain(`${name} `);
        expect(error.message, what).toContain(`(${base}`);
        expect(error.message, what).toContain(says);
        expect(error.message, what).not.toMatch(/deployment|blue-7|frag/);
        await server.close();
        server = undefined;
      }
      server = await startServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(first);
      });
      const options = { baseURL: server.url, apiKey: 'k', maxRetries: 0 };
      const error = await errorOf(
        name === 'openai' ? new OpenAIProvider(options) : new AnthropicProvider(options),
      );
      const ending =
        name === 'openai'
          ? 'The stream ended before the model finished (no finish_reason and no [DONE]).'
          : 'The stream ended before message_stop.';
      expect(error.message).toBe(`${name} sent an unusable response (${server.url}/${path}): ${ending}`);
    });

    it(`${name}: names the URL and quotes the start of a 200 JSON body that does not parse`, async () => {
      const error = await errorOf(await provider(json(200, `this is not json { ${'x'.repeat(1000)}`)));
      expect(error).toMatchObject({ code: 'bad_response', fields: { contentType: 'application/json' } });
      expect(error.message).toContain(
        `${name} answered HTTP 200 with content-type application/json (${server?.url}/`,
      );
      expect(error.message).toContain(': this is not json { xxx');
      expect(error.message).toMatch(/\.\.\. \(cut\)$/);
    });
  }
});
