/**
 * An answer blocked by the provider's content filter (`finish_reason: content_filter`, Anthropic
 * `stop_reason: refusal`, OpenAI `refusal` text) is never a silent success: the text streamed
 * before the filter cut in is only part of an answer, and a refusal is no answer at all.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, tempDir } from './helpers.ts';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function serve(answer: (res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One agent against the mock server at `url`, with its journal. */
async function runAgainst(url: string, stream = true) {
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'filtered',
    definition: makeDefinition(),
    task: 'Explain.',
    provider: new OpenAIProvider({ baseURL: url, apiKey: 'k', maxRetries: 0, stream }),
    model: 'gpt-4o',
    cwd: tempDir(),
    journal,
    systemPrompt: 'S',
  });
  return { outcome, journal };
}

describe('answers blocked by the content filter', () => {
  it('fails with content_filter instead of completing with the partial text', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunks = [
        { choices: [{ index: 0, delta: { role: 'assistant', content: 'Step one: take the' } }] },
        { choices: [{ index: 0, delta: {}, finish_reason: 'content_filter' }] },
      ];
      res.end(`${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`);
    });
    const { outcome, journal } = await runAgainst(url);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'model_behavior',
      error: { code: 'content_filter' },
    });
    expect(eventsOf(journal.events, 'Completed')).toHaveLength(0);
    expect(eventsOf(journal.events, 'ProviderReceipt').map((event) => event.stopReason)).toEqual([
      'content_filter',
    ]);
  });

  for (const stream of [true, false]) {
    it(`fails with content_filter when OpenAI sends a refusal (${stream ? 'streamed' : 'one JSON body'}), quoting it`, async () => {
      const refusal = "I'm sorry, I can't help with that.";
      const url = await serve((res) => {
        if (!stream) {
          res.writeHead(200, { 'content-type': 'application/json' });
          const message = { role: 'assistant', content: null, refusal };
          res.end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: 'stop' }] }));
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunks = [
          { choices: [{ index: 0, delta: { role: 'assistant', content: null, refusal } }] },
          { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
        ];
        res.end(`${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`);
      });
      const { outcome, journal } = await runAgainst(url, stream);
      expect(outcome).toMatchObject({
        status: 'failed',
        reason: 'model_behavior',
        error: { code: 'content_filter', message: expect.stringContaining(JSON.stringify(refusal)) },
      });
      expect(eventsOf(journal.events, 'ProviderReceipt').map((event) => event.stopReason)).toEqual([
        'content_filter',
      ]);
    });
  }
});
