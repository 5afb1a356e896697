/**
 * Output for a choice after its `finish_reason` (and before `[DONE]`) is a `bad_response`, like
 * Anthropic's delta after its block's stop. Before, the late text was appended to an answer the
 * server had said was complete, and a late tool call run. A usage chunk after the finish (OpenAI's
 * `stream_options.include_usage`) and an empty delta stay fine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { collect, startServer, type TestServer, terminal, textOf, turnRequest } from './helpers.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A provider whose server streams `chunks` then `[DONE]`. */
async function streaming(chunks: readonly unknown[]): Promise<OpenAIProvider> {
  const server = await startServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`);
  });
  servers.push(server);
  return new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
}

const FINISHED = { choices: [{ index: 0, delta: { content: 'Done.' }, finish_reason: 'stop' }] };

describe('openai output after finish_reason', () => {
  it('text after stop is a bad_response', async () => {
    const openai = await streaming([FINISHED, { choices: [{ index: 0, delta: { content: ' More.' } }] }]);
    const end = terminal(await collect(openai.turn(turnRequest())));
    expect(end.type === 'error' && end.error.code).toBe('bad_response');
    expect(end.type === 'error' && end.error.message).toMatch(/after its finish_reason "stop"/);
  });

  it('a tool call after stop is a bad_response', async () => {
    const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const openai = await streaming([FINISHED, { choices: [{ index: 0, delta: { tool_calls: [call] } }] }]);
    const end = terminal(await collect(openai.turn(turnRequest())));
    expect(end.type === 'error' && end.error.code).toBe('bad_response');
  });

  it('reasoning after a length finish is a bad_response', async () => {
    const openai = await streaming([
      { choices: [{ index: 0, delta: { content: 'Cut' }, finish_reason: 'length' }] },
      { choices: [{ index: 0, delta: { reasoning_content: 'late' } }] },
    ]);
    const end = terminal(await collect(openai.turn(turnRequest())));
    expect(end.type === 'error' && end.error.code).toBe('bad_response');
  });

  it('a usage chunk, an empty delta and another choice after stop are fine', async () => {
    const openai = await streaming([
      FINISHED,
      { choices: [{ index: 0, delta: { content: '' }, finish_reason: 'stop' }] },
      { choices: [{ index: 0, delta: {} }] },
      { choices: [{ index: 1, delta: { content: 'other choice' } }] },
      { choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } },
    ]);
    const events = await collect(openai.turn(turnRequest()));
    const end = terminal(events);
    expect(end.type).toBe('completed');
    expect(textOf(events)).toBe('Done.');
  });
});
