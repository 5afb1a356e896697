/**
 * A provider answering with a redirect: not followed. fetch strips only `authorization` on a
 * redirect to another origin, so following one sent Anthropic's `x-api-key` (and any key passed in
 * `headers`) to whatever address the server named.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { collect, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** `elsewhere` records what reaches it; `origin` redirects every request there. */
async function redirecting(status: number) {
  const elsewhere = await startServer((_req, res) => {
    res.writeHead(500).end();
  });
  const origin = await startServer((req, res) => {
    res.writeHead(status, { location: `${elsewhere.url}${req.url ?? ''}` }).end();
  });
  servers.push(elsewhere, origin);
  return { origin, elsewhere };
}

describe('redirects', () => {
  it('anthropic: a 307 to another port is not followed, and its x-api-key stays home', async () => {
    const { origin, elsewhere } = await redirecting(307);
    const provider = new AnthropicProvider({ baseURL: origin.url, apiKey: 'sk-ant-secret', maxRetries: 2 });
    const end = terminal(await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' }))));
    expect(elsewhere.received).toEqual([]);
    expect(origin.received).toHaveLength(1);
    expect(end.type === 'error' && end.error.code).toBe('bad_request');
    expect(end.type === 'error' && end.error.fields).toMatchObject({ status: 307 });
  });

  it('openai: a key passed in headers does not follow a 302 either', async () => {
    const { origin, elsewhere } = await redirecting(302);
    const provider = new OpenAIProvider({
      baseURL: origin.url,
      headers: { 'api-key': 'azure-secret' },
      maxRetries: 2,
    });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(elsewhere.received).toEqual([]);
    expect(end.type === 'error' && end.error.code).toBe('bad_request');
  });
});
