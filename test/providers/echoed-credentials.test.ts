/**
 * A server whose error answer echoes the request's credentials back (a 401 body quoting the
 * `authorization` header, a gateway quoting every header, a redirect carrying the key in its
 * location): the turn's `error` event, which programs log, holds none of them. Before, only the
 * agent loop masked the error, so a program iterating `provider.turn` printed its key.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { Provider } from '../../src/providers/types.ts';
import { collect, type Handler, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

// No known key shape: only the provider's own credentials say these are secret.
const KEY = 'echo-test-key-7f3a9c2e5b1d4086';
const GATEWAY_TOKEN = 'echo-gateway-value-93e1b7d0c4a2';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PROVIDERS: Record<string, (url: string) => Provider> = {
  openai: (url) =>
    new OpenAIProvider({
      baseURL: `${url}/v1`,
      apiKey: KEY,
      headers: { 'x-gateway-token': GATEWAY_TOKEN },
      maxRetries: 0,
    }),
  anthropic: (url) =>
    new AnthropicProvider({
      baseURL: url,
      apiKey: KEY,
      headers: { 'x-gateway-token': GATEWAY_TOKEN },
      maxRetries: 0,
    }),
};

const ANSWERS: Record<string, Handler> = {
  'a 401 quoting the key': (req, res) => {
    const key = String(req.headers['x-api-key'] ?? req.headers.authorization).replace(/^Bearer /, '');
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${key}.` } }));
  },
  'a 400 quoting every header as text': (req, res) => {
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(`rejected ${Object.values(req.headers).join(' ')}`);
  },
  'a stream error event quoting the gateway token': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(
      `data: ${JSON.stringify({ type: 'error', error: { message: `token ${req.headers['x-gateway-token']} expired` } })}\n\n`,
    );
  },
  'a redirect whose location carries the key': (req, res) => {
    const key = String(req.headers['x-api-key'] ?? req.headers.authorization).replace(/^Bearer /, '');
    res.writeHead(302, { location: `http://127.0.0.1:1/login?key=${key}` });
    res.end();
  },
};

describe("a server echoing the request's credentials in its error", () => {
  for (const [name, provider] of Object.entries(PROVIDERS)) {
    for (const [answer, handler] of Object.entries(ANSWERS)) {
      it(`${name}: ${answer} reaches the turn's error event masked`, async () => {
        server = await startServer(handler);
        const events = await collect(provider(server.url).turn(turnRequest({ model: 'm' })));
        const end = terminal(events);
        expect(end.type).toBe('error');
        const text = JSON.stringify(end);
        expect(text).toContain('[REDACTED]');
        expect(text).not.toContain(KEY);
        expect(text).not.toContain(GATEWAY_TOKEN);
      });
    }
  }
});
