/**
 * Base URLs are checked when the provider is made. Before, `localhost:8080/v1`, `ftp://x` or
 * `not a url` (as `baseURL` or in OPENAI_BASE_URL / ANTHROPIC_BASE_URL) was accepted, and every
 * request then failed with a network error; and the missing-key check compared the base URL to
 * the official one as a string, so `https://api.openai.com/v1/` went out without a key and failed
 * 401 instead of `missing_api_key`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.ts';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { checkProviderOptions } from '../../src/providers/factory.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { collect, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

function refusal(make: () => unknown): UserError {
  try {
    make();
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
  throw new Error('expected a UserError');
}

const BAD = ['localhost:8080/v1', 'ftp://x', 'not a url', 'http:example.com', 'http://', '127.0.0.1:11434'];

describe('a base URL that is not an absolute http(s) URL', () => {
  for (const baseURL of BAD) {
    it(`openai refuses baseURL ${JSON.stringify(baseURL)}`, () => {
      const error = refusal(() => new OpenAIProvider({ baseURL, apiKey: 'k', env: {} }));
      expect(error.code).toBe('invalid_option');
      expect(error.fields).toEqual({ provider: 'openai', option: 'baseURL' });
      expect(error.message).toContain('`baseURL`');
      expect(error.message).toContain('absolute http(s) URL');
      expect(error.message).toContain(JSON.stringify(baseURL));
    });

    it(`anthropic refuses baseURL ${JSON.stringify(baseURL)}`, () => {
      const error = refusal(() => new AnthropicProvider({ baseURL, apiKey: 'k', env: {} }));
      expect(error.code).toBe('invalid_option');
      expect(error.fields).toEqual({ provider: 'anthropic', option: 'baseURL' });
    });
  }

  it('the check without building a provider refuses it too', () => {
    for (const name of ['openai', 'anthropic'] as const) {
      const error = refusal(() => checkProviderOptions(name, { baseURL: 'localhost:8080/v1' }));
      expect(error.fields).toEqual({ provider: name, option: 'baseURL' });
    }
  });

  it('OPENAI_BASE_URL and ANTHROPIC_BASE_URL are checked, naming the variable', () => {
    const openai = refusal(() => new OpenAIProvider({ env: { OPENAI_BASE_URL: 'localhost:11434/v1' } }));
    expect(openai.code).toBe('invalid_option');
    expect(openai.fields).toEqual({ provider: 'openai', option: 'OPENAI_BASE_URL' });
    expect(openai.message).toContain('`OPENAI_BASE_URL`');
    expect(openai.message).toContain('"localhost:11434/v1"');
    const anthropic = refusal(
      () => new AnthropicProvider({ apiKey: 'k', env: { ANTHROPIC_BASE_URL: 'ftp://proxy' } }),
    );
    expect(anthropic.fields).toEqual({ provider: 'anthropic', option: 'ANTHROPIC_BASE_URL' });
  });

  it('the value is shown with its password and query masked', () => {
    for (const baseURL of ['ftp://me:hunter2pass@host/v1?key=sk-querykey', 'me:hunter2pass@host:8080/v1']) {
      const error = refusal(() => new OpenAIProvider({ baseURL, apiKey: 'k', env: {} }));
      expect(error.code).toBe('invalid_option');
      expect(error.message).not.toContain('hunter2pass');
      expect(error.message).not.toContain('sk-querykey');
      expect(error.message).toContain('host');
    }
    const fromEnv = refusal(
      () => new OpenAIProvider({ env: { OPENAI_BASE_URL: 'user:hunter2pass@localhost:11434/v1' } }),
    );
    expect(fromEnv.message).not.toContain('hunter2pass');
  });

  it('absolute http(s) URLs are accepted, whatever their case, port, path or query', () => {
    for (const baseURL of [
      'http://127.0.0.1:11434/v1',
      'HTTPS://Example.COM',
      'https://user:pass@proxy.example/v1/?api-version=1#x',
      ' http://localhost:8080/v1 ',
    ]) {
      expect(() => new OpenAIProvider({ baseURL, env: {} })).not.toThrow();
      expect(() => new AnthropicProvider({ baseURL, env: {} })).not.toThrow();
    }
    expect(
      () => new OpenAIProvider({ env: { OPENAI_BASE_URL: ' http://localhost:11434/v1 ' } }),
    ).not.toThrow();
  });
});

it('a base URL with spaces around it posts to its path, not to one with a space in it', async () => {
  const server = await startServer((_req, res) => {
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"no"}}');
  });
  servers.push(server);
  const provider = new OpenAIProvider({ baseURL: ` ${server.url}/v1 `, apiKey: 'k', maxRetries: 0 });
  terminal(await collect(provider.turn(turnRequest())));
  expect(server.received.map((request) => request.url)).toEqual(['/v1/chat/completions']);
});

describe('the missing-key check compares the base URL by origin', () => {
  const officialOpenAI = [
    'https://api.openai.com/v1/',
    'https://api.openai.com/v1?x=1',
    'https://API.OpenAI.com/v1',
    'https://api.openai.com:443/v1',
    'https://api.openai.com',
  ];
  for (const baseURL of officialOpenAI) {
    it(`openai without a key at ${baseURL} is missing_api_key`, () => {
      const error = refusal(() => new OpenAIProvider({ baseURL, env: {} }));
      expect(error.code).toBe('missing_api_key');
      expect(error.fields).toEqual({ provider: 'openai', option: 'apiKey' });
    });
  }

  it('openai: the same from OPENAI_BASE_URL', () => {
    const error = refusal(
      () => new OpenAIProvider({ env: { OPENAI_BASE_URL: 'https://api.openai.com/v1/' } }),
    );
    expect(error.code).toBe('missing_api_key');
  });

  it('anthropic without a key at the official origin is missing_api_key', () => {
    for (const baseURL of ['https://api.anthropic.com/', 'https://api.anthropic.com?beta=1']) {
      expect(refusal(() => new AnthropicProvider({ baseURL, env: {} })).code).toBe('missing_api_key');
    }
    const fromEnv = refusal(
      () => new AnthropicProvider({ env: { ANTHROPIC_BASE_URL: 'https://api.anthropic.com/' } }),
    );
    expect(fromEnv.code).toBe('missing_api_key');
  });

  it('another server needs no key', () => {
    expect(() => new OpenAIProvider({ baseURL: 'https://api.openai.com.example/v1', env: {} })).not.toThrow();
    expect(() => new OpenAIProvider({ baseURL: 'http://127.0.0.1:11434/v1/', env: {} })).not.toThrow();
    expect(() => new AnthropicProvider({ baseURL: 'http://127.0.0.1:1/', env: {} })).not.toThrow();
  });
});
