/**
 * Parallel tool calls that share one `index` (Ollama streams index 0 for every call of a turn, and
 * so do some gateways and Gemini's compatible API): each id is its own call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { ToolSpec } from '../../src/tools/types.ts';
import { collect, startServer, type TestServer, terminal, toolCallsOf, turnRequest } from './helpers.ts';

const READ_FILE: ToolSpec = {
  name: 'read_file',
  description: 'Reads a file.',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};
const LIST_DIR: ToolSpec = {
  name: 'list_dir',
  description: 'Lists a directory.',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function sse(...chunks: unknown[]): string {
  return `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`;
}

function callDelta(call: Record<string, unknown>) {
  return { choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }] };
}

describe('openai tool calls that reuse an index', () => {
  it('keeps calls with different ids at one index apart, fragments following their own call', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        sse(
          callDelta({ index: 0, id: 'call_a', function: { name: 'read_file', arguments: '{"path":' } }),
          callDelta({ index: 0, function: { arguments: '"a.md"}' } }),
          callDelta({ index: 0, id: 'call_b', function: { name: 'list_dir', arguments: '{"path":"."}' } }),
          { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        ),
      );
    });
    const openai = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const turn = openai.turn(turnRequest({ tools: [READ_FILE, LIST_DIR] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'ok';
    });
    expect(toolCallsOf(events).map((call) => [call.id, call.name, call.arguments, call.parseError])).toEqual([
      ['call_a', 'read_file', { path: 'a.md' }, undefined],
      ['call_b', 'list_dir', { path: '.' }, undefined],
    ]);
    expect(terminal(events)).toMatchObject({ type: 'completed', stopReason: 'tool_calls' });
  });
});
