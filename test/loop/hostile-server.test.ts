/**
 * Issue 23 items 1 and 7 at the agent level: a server that streams without end, and one that
 * stalls, each end that one agent with a typed, journalled failure, and the process keeps a
 * bounded amount of memory.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, tempDir } from './helpers.ts';

let server: Server | undefined;
afterEach(async () => {
  const running = server;
  server = undefined;
  if (!running) return;
  running.closeAllConnections();
  await new Promise<void>((resolve) => running.close(() => resolve()));
});

async function listen(handler: (res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(res));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

async function agentAgainst(baseURL: string, options: ConstructorParameters<typeof OpenAIProvider>[0] = {}) {
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'victim',
    definition: makeDefinition(),
    task: 'hello',
    provider: new OpenAIProvider({ baseURL, apiKey: 'k', maxRetries: 0, ...options }),
    model: 'gpt-4.1-mini',
    cwd: tempDir(),
    journal,
    systemPrompt: 'S',
  });
  return { outcome, events: journal.events };
}

describe('an agent against a hostile server', () => {
  it('a fast endless stream of 256 KiB deltas fails the agent with response_too_large, journalled, memory bounded', async () => {
    const delta = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x'.repeat(256 * 1024) } }] })}\n\n`;
    const url = await listen((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const write = (): void => {
        while (!res.destroyed) if (!res.write(delta)) return void res.once('drain', write);
      };
      write();
    });
    const before = process.memoryUsage().heapUsed;
    const { outcome, events } = await agentAgainst(url);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(256 * 1024 * 1024);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      error: { code: 'response_too_large', fields: { maxOutputChars: 2_000_000 } },
    });
    // The request's receipt is journalled with the failure, and what it streamed is counted.
    const receipt = eventsOf(events, 'ProviderReceipt')[0];
    expect(receipt).toMatchObject({
      errorCode: 'response_too_large',
      receipt: { usage: { estimated: true } },
    });
    expect(receipt?.receipt.usage.outputTokens).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({ type: 'Failed', error: { code: 'response_too_large' } });
  });

  it('a stream that stalls fails the agent with timeout after the idle timeout, not the request timeout', async () => {
    const url = await listen((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Hel' } }] })}\n\n`);
    });
    const { outcome, events } = await agentAgainst(url, { idleTimeoutMs: 200 });
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      error: { code: 'timeout', fields: { idleTimeoutMs: 200 } },
    });
    expect(eventsOf(events, 'ProviderReceipt')[0]).toMatchObject({ errorCode: 'timeout' });
  });
});

describe('the usage of a request cut off while it streamed tool-call arguments', () => {
  it('counts the arguments it streamed as estimated output, not 0', async () => {
    const first = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'read_file', arguments: '' } }] } }] })}\n\n`;
    const fragment = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'a'.repeat(1000) } }] } }] })}\n\n`;
    const url = await listen((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(first);
      const write = (): void => {
        while (!res.destroyed) if (!res.write(fragment)) return void res.once('drain', write);
      };
      write();
    });
    const { outcome, events } = await agentAgainst(url, { maxOutputChars: 20_000 });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'response_too_large' } });
    const receipt = events.find((event) => event.type === 'ProviderReceipt');
    // 20,000 characters of arguments at ~4 per token.
    expect(receipt).toMatchObject({ receipt: { usage: { estimated: true } } });
    expect(
      (receipt as { receipt: { usage: { outputTokens: number } } }).receipt.usage.outputTokens,
    ).toBeGreaterThanOrEqual(5000);
  });
});

describe('a request that never reached its server', () => {
  it('has no usage: a refused connection is not charged an estimated input', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { outcome, events } = await agentAgainst(`http://127.0.0.1:${port}/v1`);
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    expect(outcome.usage).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    expect(eventsOf(events, 'ProviderReceipt')[0]?.receipt.usage.estimated).toBeUndefined();
  });

  it('has no usage and no retry when fetch refuses the port (on the fetch standard blocked list)', async () => {
    // undici refuses port 9 before connecting, with no errno: it was charged ~2.3k estimated
    // tokens and retried twice, to fail the same way.
    const { outcome, events } = await agentAgainst('http://127.0.0.1:9/v1', { maxRetries: 2 });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'bad_request' } });
    expect(outcome.status === 'failed' ? outcome.error.message : '').toContain('fetch refuses port 9');
    expect(outcome.usage).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    const receipt = eventsOf(events, 'ProviderReceipt')[0]?.receipt;
    expect(receipt?.usage.estimated).toBeUndefined();
    expect(receipt?.retries ?? 0).toBe(0);
  });
});

describe('an agent whose server echoes its API key', () => {
  const answer401 = (key: string) => (res: ServerResponse) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${key}.`, type: 'auth' } }));
  };

  it('a key of no known shape is masked in the journal and the outcome: it is the configured key', async () => {
    // Groq-style: no pattern of the journal's redaction matches it.
    const key = 'gsk_Zq81kfPL0mcWvB3sTn5x7aYjH2dRe9uQ';
    const url = await listen(answer401(key));
    const { outcome, events } = await agentAgainst(url, { apiKey: key });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'auth_failed' } });
    expect(JSON.stringify(outcome)).not.toContain(key);
    expect(JSON.stringify(events)).not.toContain(key);
    expect(JSON.stringify(outcome)).toContain('Incorrect API key provided: [REDACTED]');
  });

  it('the outcome (what agent:failed carries) is masked like the journal, not only the journal', async () => {
    const url = await listen(answer401('sk-proj-aB3dE5fG7hJ9kL1mN3pQ5rS7'));
    const { outcome, events } = await agentAgainst(url);
    expect(outcome.status).toBe('failed');
    expect(JSON.stringify(outcome)).not.toContain('aB3dE5fG7hJ9kL1mN3pQ5rS7');
    expect(JSON.stringify(events)).not.toContain('aB3dE5fG7hJ9kL1mN3pQ5rS7');
  });
});
