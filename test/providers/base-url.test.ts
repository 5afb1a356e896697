/**
 * A base URL with a query (Azure's `?api-version=`): the API path goes before the query, which is
 * kept; a fragment is dropped. Before, `http://h/v1?api-version=1` posted to
 * `/v1?api-version=1/chat/completions`, i.e. to `/v1` with a garbled query.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { collect, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A server that answers every request 400, recording its path and query. */
async function recording(): Promise<TestServer> {
  const server = await startServer((_req, res) => {
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"no"}}');
  });
  servers.push(server);
  return server;
}

describe('base URL with a query', () => {
  it('openai: the path goes before the query, which is kept', async () => {
    const server = await recording();
    const provider = new OpenAIProvider({ baseURL: `${server.url}/v1?api-version=1`, maxRetries: 0 });
    terminal(await collect(provider.turn(turnRequest())));
    expect(server.received.map((request) => request.url)).toEqual(['/v1/chat/completions?api-version=1']);
  });

  it('openai: a trailing slash before the query, several parameters and a fragment', async () => {
    const server = await recording();
    const provider = new OpenAIProvider({
      baseURL: `${server.url}/openai/deployments/d/?api-version=2024-10-21&x=a%20b#frag`,
      maxRetries: 0,
    });
    terminal(await collect(provider.turn(turnRequest())));
    expect(server.received.map((request) => request.url)).toEqual([
      '/openai/deployments/d/chat/completions?api-version=2024-10-21&x=a%20b',
    ]);
  });

  it('anthropic: the same', async () => {
    const server = await recording();
    const provider = new AnthropicProvider({
      baseURL: `${server.url}/proxy?team=7#x`,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
    });
    terminal(await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' }))));
    expect(server.received.map((request) => request.url)).toEqual(['/proxy/v1/messages?team=7']);
  });

  it('a base URL without a query is unchanged', async () => {
    const server = await recording();
    const provider = new OpenAIProvider({ baseURL: `${server.url}/v1/`, maxRetries: 0 });
    terminal(await collect(provider.turn(turnRequest())));
    expect(server.received.map((request) => request.url)).toEqual(['/v1/chat/completions']);
  });
});
