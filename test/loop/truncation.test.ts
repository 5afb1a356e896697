/**
 * An answer cut off by the model's output limit (`finish_reason: length`, `stop_reason:
 * max_tokens`) is never a silent success: the loop asks once for a continuation, then fails with
 * `truncated`. Recorded streams from the official SDKs' fixtures, served by a loopback server.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TRUNCATION_NOTICE } from '../../src/constants.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { Provider } from '../../src/providers/types.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, tempDir } from './helpers.ts';

const CORPUS = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/corpus/provider-streams',
);
const recording = (name: string) => readFileSync(path.join(CORPUS, name));

interface Loopback {
  readonly url: string;
  readonly bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

let loopback: Loopback | undefined;
afterEach(async () => {
  await loopback?.close();
  loopback = undefined;
});

/** Serves `answers[i]` to request i (the last one again after that). */
async function serve(answers: readonly ((res: ServerResponse) => void)[]): Promise<Loopback> {
  const bodies: Record<string, unknown>[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>);
      const answer = answers[bodies.length - 1] ?? answers.at(-1);
      answer?.(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sse = (body: Buffer) => (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(body);
};
const json = (body: unknown) => (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function run(provider: Provider, model: string, limits = {}) {
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'cut',
    definition: makeDefinition(),
    task: 'Answer in JSON.',
    provider,
    model,
    cwd: tempDir(),
    journal,
    systemPrompt: 'S',
    limits,
  });
  return { outcome, events: journal.events };
}

/** The user message of a recorded OpenAI request. */
function userInput(body: Record<string, unknown> | undefined): string {
  const messages = (body?.messages ?? []) as { role: string; content: string }[];
  return messages.find((message) => message.role === 'user')?.content ?? '';
}

describe('answers cut off by the output limit', () => {
  it('asks once for a continuation, then fails with truncated (OpenAI stream, finish_reason length)', async () => {
    loopback = await serve([sse(recording('openai-chat-stream-finish-length.sse'))]);
    const provider = new OpenAIProvider({ baseURL: loopback.url, apiKey: 'k', maxRetries: 0 });
    const { outcome, events } = await run(provider, 'gpt-4o');
    expect(loopback.bodies).toHaveLength(2);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'truncated',
      error: { code: 'truncated' },
      rounds: 2,
    });
    // The second request shows the cut-off text and asks to continue.
    const second = userInput(loopback.bodies[1]);
    expect(second).toContain('Assistant: {"');
    expect(second.endsWith(TRUNCATION_NOTICE)).toBe(true);
    expect(eventsOf(events, 'ProviderReceipt').map((event) => event.stopReason)).toEqual([
      'length',
      'length',
    ]);
    expect(verifyJournal(events, { rerender: journalRerender() }).ok).toBe(true);
  });

  it('fails with truncated at once when no continuation is allowed (Anthropic stream, max_tokens in a tool call)', async () => {
    loopback = await serve([sse(recording('anthropic-messages-stream-max-tokens-partial-json.sse'))]);
    const provider = new AnthropicProvider({ baseURL: loopback.url, apiKey: 'k', maxRetries: 0 });
    const { outcome, events } = await run(provider, 'claude-sonnet-4-5', { truncationRetries: 0 });
    expect(loopback.bodies).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'truncated' });
    // The unfinished tool call was not run.
    expect(eventsOf(events, 'ToolCall')).toHaveLength(0);
  });

  it('completes when the continuation finishes the answer (non-streamed bodies)', async () => {
    loopback = await serve([
      json({
        choices: [
          { index: 0, message: { role: 'assistant', content: 'The answer is' }, finish_reason: 'length' },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 3 },
      }),
      json({
        choices: [{ index: 0, message: { role: 'assistant', content: '42.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 20, completion_tokens: 2 },
      }),
    ]);
    const provider = new OpenAIProvider({ baseURL: loopback.url, apiKey: 'k', maxRetries: 0, stream: false });
    const { outcome, events } = await run(provider, 'gpt-4o');
    expect(outcome).toMatchObject({ status: 'completed', answer: '42.', steps: 2 });
    expect(userInput(loopback.bodies[1])).toContain(`Assistant: The answer is\n\n${TRUNCATION_NOTICE}`);
    expect(eventsOf(events, 'HistoryAppended').map((event) => event.kind)).toEqual([
      'assistant',
      'continuation',
      'assistant',
    ]);
  });
});
