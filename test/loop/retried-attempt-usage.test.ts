/**
 * A request retried after its server had an attempt (a 200 whose stream broke off) is charged for
 * every such attempt once: the usage each reported, and an estimate for one that reported none.
 * Before, an attempt without usage was dropped (the request was charged its last attempt only),
 * and one whose output was estimated had that output counted again from the last attempt's text.
 * The journal's receipt is what the budgets count (the outcome's usage) and what the run
 * directory's summary adds up.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { sumReceipts } from '../../src/journal/usage.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { Provider } from '../../src/providers/types.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, tempDir } from './helpers.ts';

let server: Server | undefined;

async function closeServer(): Promise<void> {
  const running = server;
  server = undefined;
  if (!running) return;
  running.closeAllConnections();
  await new Promise<void>((resolve) => running.close(() => resolve()));
}
afterEach(closeServer);

/** Serves `answers[n]` to the n-th request (the last one to any after it). */
async function listen(answers: readonly ((res: ServerResponse) => void)[]): Promise<string> {
  await closeServer();
  let served = 0;
  server = createServer((req, res) => {
    const answer = answers[Math.min(served, answers.length - 1)];
    served += 1;
    req.resume();
    req.on('end', () => answer?.(res));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** 400 characters of tool-call arguments: kept by the provider, never emitted, so retryable. */
const ARGUMENTS = `{"text":"${'x'.repeat(389)}"}`;
const noSleep = async (): Promise<void> => {};

async function run(provider: Provider, model: string) {
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'a',
    definition: makeDefinition(),
    task: 'hello',
    provider,
    model,
    cwd: tempDir(),
    journal,
    systemPrompt: 'S',
  });
  const receipts = eventsOf(journal.events, 'ProviderReceipt');
  return { outcome, receipts };
}

function chatChunk(res: ServerResponse, chunk: Record<string, unknown>): void {
  res.write(`data: ${JSON.stringify(chunk)}\n\n`);
}

/** An OpenAI stream that starts a tool call's arguments, then the connection resets. */
function openaiCut(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  chatChunk(res, {
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: 'c1', type: 'function', function: { name: 'write', arguments: ARGUMENTS } },
          ],
        },
      },
    ],
  });
  setImmediate(() => res.destroy());
}

function openaiAnswer(usage: boolean) {
  return (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    chatChunk(res, { choices: [{ index: 0, delta: { content: 'done' }, finish_reason: 'stop' }] });
    if (usage) chatChunk(res, { choices: [], usage: { prompt_tokens: 40, completion_tokens: 5 } });
    res.end('data: [DONE]\n\n');
  };
}

function sse(res: ServerResponse, events: readonly Record<string, unknown>[]): void {
  for (const event of events) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
}

const messageStart = {
  type: 'message_start',
  message: { id: 'm', role: 'assistant', content: [], usage: { input_tokens: 1000, output_tokens: 1 } },
};

/** An Anthropic stream that reports its input, starts a tool call's input, then resets. */
function anthropicCut(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  sse(res, [
    messageStart,
    {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'tool_use', id: 't1', name: 'write', input: {} },
    },
    { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ARGUMENTS } },
  ]);
  setImmediate(() => res.destroy());
}

function anthropicAnswer(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  sse(res, [
    messageStart,
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
    { type: 'message_stop' },
  ]);
  res.end();
}

describe('a request retried after a stream that broke off', () => {
  it('openai: an attempt that reported no usage is estimated and charged with the one that did', async () => {
    // The same request answered at once without usage: the loop's estimate of its input.
    const alone = await run(
      new OpenAIProvider({ apiKey: 'k', baseURL: `${await listen([openaiAnswer(false)])}/v1` }),
      'gpt-4.1-mini',
    );
    const estimatedInput = alone.receipts[0]?.receipt.usage.inputTokens ?? 0;
    expect(estimatedInput).toBeGreaterThan(0);

    const baseURL = `${await listen([openaiCut, openaiAnswer(true)])}/v1`;
    const { outcome, receipts } = await run(
      new OpenAIProvider({ apiKey: 'k', baseURL, maxRetries: 1, sleep: noSleep }),
      'gpt-4.1-mini',
    );
    expect(outcome.status).toBe('completed');
    expect(receipts).toHaveLength(1);
    expect(receipts[0]?.receipt).toMatchObject({ requests: 1, retries: 1, requestsWithoutUsage: 0 });
    // The retry's 40 + 5 as reported; the broken attempt's input as the loop estimates it, and
    // its 400 characters of arguments at ~4 a token.
    expect(receipts[0]?.receipt.usage).toEqual({
      inputTokens: 40 + estimatedInput,
      outputTokens: 5 + ARGUMENTS.length / 4,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      estimated: true,
    });
    // What the budgets counted is what the journal (and so the summary) holds.
    expect(outcome.usage).toEqual(sumReceipts(receipts.map((event) => event.receipt)).usage);
  });

  it('openai: two attempts without usage are each estimated once', async () => {
    const alone = await run(
      new OpenAIProvider({ apiKey: 'k', baseURL: `${await listen([openaiAnswer(false)])}/v1` }),
      'gpt-4.1-mini',
    );
    const single = alone.receipts[0]?.receipt.usage;
    const baseURL = `${await listen([openaiCut, openaiAnswer(false)])}/v1`;
    const { receipts } = await run(
      new OpenAIProvider({ apiKey: 'k', baseURL, maxRetries: 1, sleep: noSleep }),
      'gpt-4.1-mini',
    );
    expect(receipts[0]?.receipt).toMatchObject({ retries: 1, requestsWithoutUsage: 1 });
    expect(receipts[0]?.receipt.usage).toEqual({
      inputTokens: 2 * (single?.inputTokens ?? 0),
      outputTokens: (single?.outputTokens ?? 0) + ARGUMENTS.length / 4,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      estimated: true,
    });
  });

  it('anthropic: the broken attempt keeps its own estimated output, the retry its reported count', async () => {
    const baseURL = await listen([anthropicCut, anthropicAnswer]);
    const { outcome, receipts } = await run(
      new AnthropicProvider({ apiKey: 'k', baseURL, maxRetries: 1, sleep: noSleep }),
      'claude-sonnet-4-6',
    );
    expect(outcome.status).toBe('completed');
    expect(receipts).toHaveLength(1);
    // Before: 2,000 in and max(count of 'hi', 1 + 5) = 6 out; the broken attempt's 400
    // characters of tool input were dropped.
    expect(receipts[0]?.receipt.usage).toEqual({
      inputTokens: 2000,
      outputTokens: ARGUMENTS.length / 4 + 5,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      estimated: true,
      estimatedSide: 'output',
    });
    expect(outcome.usage).toEqual(sumReceipts(receipts.map((event) => event.receipt)).usage);
  });

  it('a retry refused before it was sent adds nothing to the attempt before it', async () => {
    let admitted = 0;
    const admission = {
      acquire: async () => {
        admitted += 1;
        if (admitted > 1) throw new Error('no slot');
        return () => {};
      },
    };
    const baseURL = await listen([anthropicCut]);
    const { outcome, receipts } = await run(
      new AnthropicProvider({ apiKey: 'k', baseURL, maxRetries: 1, sleep: noSleep, admission }),
      'claude-sonnet-4-6',
    );
    expect(outcome.status).toBe('failed');
    expect(receipts[0]?.receipt.usage).toEqual({
      inputTokens: 1000,
      outputTokens: ARGUMENTS.length / 4,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      estimated: true,
      estimatedSide: 'output',
    });
  });
});
