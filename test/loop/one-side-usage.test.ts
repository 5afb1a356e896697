/**
 * A server that reports one side of a request's usage readably and the other not (absurd, negative
 * or missing): the agent's journal keeps the side it reported, estimates only the other and says
 * which (`usage.estimatedSide`), and the token budget counts the reported side. Both sides used to
 * be estimated, so a request the server said read 50,000 tokens was counted as a few hundred.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { Provider } from '../../src/providers/types.ts';
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

/** Answers every request with `answer(requestNumber)`; returns the base URL. */
async function listen(answer: (res: ServerResponse, request: number) => void): Promise<string> {
  let requests = 0;
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests += 1;
      answer(res, requests);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const CALL_ARGS = JSON.stringify({ path: 'missing.txt' });

/** Chat Completions: a read_file call first, then a text answer; `usage` on every response. */
function openAIServer(usage: Record<string, unknown>) {
  return (res: ServerResponse, request: number): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const delta =
      request === 1
        ? {
            tool_calls: [
              { index: 0, id: 'c1', type: 'function', function: { name: 'read_file', arguments: CALL_ARGS } },
            ],
          }
        : { content: 'done' };
    const finish = request === 1 ? 'tool_calls' : 'stop';
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

/** Messages: a read_file tool_use first, then a text answer; `usage` at start and end. */
function anthropicServer(usage: Record<string, unknown>) {
  return (res: ServerResponse, request: number): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const block =
      request === 1
        ? [
            {
              type: 'content_block_start',
              index: 0,
              content_block: { type: 'tool_use', id: 'c1', name: 'read_file', input: {} },
            },
            {
              type: 'content_block_delta',
              index: 0,
              delta: { type: 'input_json_delta', partial_json: CALL_ARGS },
            },
          ]
        : [
            { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'done' } },
          ];
    const events = [
      { type: 'message_start', message: { id: `m${request}`, role: 'assistant', content: [], usage } },
      ...block,
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: request === 1 ? 'tool_use' : 'end_turn' }, usage },
      { type: 'message_stop' },
    ];
    for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    res.end();
  };
}

const PROVIDERS = {
  openai: {
    model: 'gpt-4.1-mini',
    server: openAIServer,
    provider: (url: string): Provider =>
      new OpenAIProvider({ baseURL: `${url}/v1`, apiKey: 'k', maxRetries: 0 }),
    // Reported as hidden reasoning: without an output cap, an output count beyond what streamed is
    // taken only for the reasoning the server says it did (test/providers/usage-lies.test.ts).
    usage: (input: unknown, output: unknown) => ({
      prompt_tokens: input,
      completion_tokens: output,
      completion_tokens_details: { reasoning_tokens: output },
    }),
  },
  anthropic: {
    model: 'claude-sonnet-4-6',
    server: anthropicServer,
    provider: (url: string): Provider => new AnthropicProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 }),
    usage: (input: unknown, output: unknown) => ({ input_tokens: input, output_tokens: output }),
  },
} as const;

async function agentAgainst(
  name: keyof typeof PROVIDERS,
  input: unknown,
  output: unknown,
  maxTotalTokens = 0,
) {
  const spec = PROVIDERS[name];
  const url = await listen(spec.server(spec.usage(input, output)));
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'a',
    definition: makeDefinition(),
    task: 'hello',
    provider: spec.provider(url),
    model: spec.model,
    cwd: tempDir(),
    journal,
    systemPrompt: 'S',
    limits: { maxTotalTokens },
  });
  return { outcome, receipts: eventsOf(journal.events, 'ProviderReceipt').map((event) => event.receipt) };
}

describe('a server that reports one side of the usage unreadably', () => {
  for (const name of ['openai', 'anthropic'] as const) {
    it(`${name}: an absurd output keeps the reported input; only the output is estimated, and journalled so`, async () => {
      const { outcome, receipts } = await agentAgainst(name, 4321, -7);
      expect(outcome.status).toBe('completed');
      expect(receipts).toHaveLength(2);
      for (const receipt of receipts) {
        expect(receipt.usage).toMatchObject({ inputTokens: 4321, estimated: true, estimatedSide: 'output' });
        expect(receipt.usage.outputTokens).toBeGreaterThan(0);
        expect(receipt.usage.outputTokens).toBeLessThan(100);
        expect(receipt.requestsWithoutUsage).toBe(0);
      }
      expect(outcome.usage).toMatchObject({ inputTokens: 8642, estimated: true, estimatedSide: 'output' });
    });

    it(`${name}: a missing input keeps the reported output; only the input is estimated, and journalled so`, async () => {
      const { outcome, receipts } = await agentAgainst(name, undefined, 777);
      expect(outcome.status).toBe('completed');
      for (const receipt of receipts) {
        expect(receipt.usage).toMatchObject({ outputTokens: 777, estimated: true, estimatedSide: 'input' });
        // The projection and the tool schemas, counted with the model's tokenizer.
        expect(receipt.usage.inputTokens).toBeGreaterThan(100);
        expect(receipt.usage.inputTokens).toBeLessThan(50_000);
      }
    });

    // 10,000 tokens: a request of this size could hold that many (an input count above the body's
    // bytes plus INPUT_TOKEN_OVERHEAD is refused, test/providers/usage-lies.test.ts).
    it(`${name}: the token budget counts the reported side (10,000 in, output 1e308)`, async () => {
      const { outcome, receipts } = await agentAgainst(name, 10_000, 1e308, 8_000);
      expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'token_budget' } });
      // The budget ended the agent before its second request.
      expect(receipts).toHaveLength(1);
      expect(outcome.usage.inputTokens).toBe(10_000);
      expect(Number.isSafeInteger(outcome.usage.outputTokens)).toBe(true);
    });

    // 9,000: within Anthropic's output cap (8,192 plus OUTPUT_TOKEN_SLACK), and OpenAI's hidden
    // reasoning allowance; a count above a request's cap is refused (test/providers/usage-lies.test.ts).
    it(`${name}: the token budget counts the reported side (input "NaN", 9,000 out)`, async () => {
      const { outcome, receipts } = await agentAgainst(name, 'NaN', 9_000, 8_000);
      expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'token_budget' } });
      expect(receipts).toHaveLength(1);
      expect(outcome.usage).toMatchObject({ outputTokens: 9_000, estimatedSide: 'input' });
    });
  }
});
