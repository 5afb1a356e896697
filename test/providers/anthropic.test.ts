/** The anthropic provider's requests and continuations, against a local server. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import type { ToolChoice, TurnEvent } from '../../src/providers/types.ts';
import type { ToolSpec } from '../../src/tools/types.ts';
import {
  collect,
  corpusFile,
  type Handler,
  replay,
  startServer,
  type TestServer,
  terminal,
  toolCallsOf,
  turnRequest,
} from './helpers.ts';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/providers');
const THINKING_TOOLS = readFileSync(path.join(FIXTURES, 'anthropic-thinking-parallel-tool-use.sse'));

const READ_FILE: ToolSpec = {
  name: 'read_file',
  description: 'Reads a file.',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function serveInOrder(...bodies: Buffer[]): Handler {
  return (_req, res, index) =>
    replay(res, bodies[index] ?? bodies.at(-1) ?? Buffer.alloc(0), 'text/event-stream', index + 11);
}

async function anthropic(handler: Handler, options: ConstructorParameters<typeof AnthropicProvider>[0] = {}) {
  server = await startServer(handler);
  return {
    server,
    provider: new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0, ...options }),
  };
}

describe('anthropic requests', () => {
  it('sends a streaming Messages request with tools, the output limit and the version header', async () => {
    const { server, provider } = await anthropic(
      serveInOrder(corpusFile('anthropic-messages-stream-text.sse')),
    );
    await collect(
      provider.turn(
        turnRequest({
          model: 'claude-sonnet-4-5',
          system: 'Be brief.',
          input: 'Hi',
          tools: [READ_FILE],
          maxOutputTokens: 500,
        }),
      ),
    );
    expect(server.received[0]?.json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 500,
      system: 'Be brief.',
      stream: true,
      tools: [{ name: 'read_file', description: 'Reads a file.', input_schema: READ_FILE.parameters }],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(server.received[0]?.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('maps tool choices: required becomes any, one tool becomes a named tool choice', async () => {
    const { server, provider } = await anthropic(
      serveInOrder(corpusFile('anthropic-messages-stream-text.sse')),
    );
    const choices: ToolChoice[] = ['auto', 'none', 'required', { tool: 'read_file' }];
    for (const toolChoice of choices)
      await collect(provider.turn(turnRequest({ tools: [READ_FILE], toolChoice })));
    expect(server.received.map((request) => request.json.tool_choice)).toEqual([
      { type: 'auto' },
      { type: 'none' },
      { type: 'any' },
      { type: 'tool', name: 'read_file' },
    ]);
  });

  it('turns a reasoning effort into a thinking budget on top of the output limit', async () => {
    const { server, provider } = await anthropic(
      serveInOrder(corpusFile('anthropic-messages-stream-text.sse')),
    );
    await collect(provider.turn(turnRequest({ reasoningEffort: 'medium' })));
    await collect(provider.turn(turnRequest({ reasoningEffort: 'none' })));
    expect(server.received[0]?.json).toMatchObject({
      max_tokens: 8192 + 4096,
      thinking: { type: 'enabled', budget_tokens: 4096 },
    });
    expect(server.received[1]?.json).toMatchObject({ max_tokens: 8192 });
    expect(server.received[1]?.json.thinking).toBeUndefined();
  });

  it('rejects reasoning efforts it has no mapping for before sending', async () => {
    const { server, provider } = await anthropic(
      serveInOrder(corpusFile('anthropic-messages-stream-text.sse')),
    );
    for (const reasoningEffort of ['minimal', 'xhigh'] as const) {
      const end = terminal(await collect(provider.turn(turnRequest({ reasoningEffort }))));
      expect(end.type === 'error' && end.error.code).toBe('bad_request');
    }
    expect(server.received).toHaveLength(0);
  });

  it('reads the key and base URL from the environment', async () => {
    server = await startServer(serveInOrder(corpusFile('anthropic-messages-stream-text.sse')));
    const provider = new AnthropicProvider({
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'env-key' },
    });
    await collect(provider.turn(turnRequest()));
    expect(server.received[0]?.headers['x-api-key']).toBe('env-key');
    expect(() => new AnthropicProvider({ env: {} })).toThrow(
      expect.objectContaining({ code: 'missing_api_key' }),
    );
  });

  it('accepts a JSON body when streaming is off', async () => {
    const { server, provider } = await anthropic(
      (_req, res) =>
        replay(res, corpusFile('anthropic-messages-response-text-tool-use.json'), 'application/json', 1),
      { stream: false },
    );
    const turn = provider.turn(turnRequest({ tools: [READ_FILE] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'updated';
    });
    expect(server.received[0]?.json.stream).toBeUndefined();
    expect(toolCallsOf(events).map((call) => call.name)).toEqual(['updateIssueList']);
  });
});

describe('anthropic tool rounds', () => {
  it('sends thinking, text and tool_use blocks back, then the tool results in one user message', async () => {
    const { server, provider } = await anthropic(
      serveInOrder(THINKING_TOOLS, corpusFile('anthropic-messages-stream-text.sse')),
    );
    const turn = provider.turn(
      turnRequest({ model: 'claude-sonnet-4-5', input: 'Compare a.md and b.md', tools: [READ_FILE] }),
    );
    const events: TurnEvent[] = [];
    for await (const event of turn) {
      events.push(event);
      if (event.type === 'tool_call' && event.id === 'toolu_b') {
        turn.respond('toolu_b', 'contents of b');
        turn.respond('toolu_a', 'contents of a');
      }
    }
    expect(toolCallsOf(events).map((call) => call.arguments)).toEqual([{ path: 'a.md' }, { path: 'b.md' }]);
    expect(server.received[1]?.json.messages).toEqual([
      { role: 'user', content: 'Compare a.md and b.md' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Both files are needed.', signature: 'c2lnbmF0dXJl' },
          { type: 'text', text: 'Reading both.' },
          { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a.md' } },
          { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'b.md' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_a', content: 'contents of a' },
          { type: 'tool_result', tool_use_id: 'toolu_b', content: 'contents of b' },
        ],
      },
    ]);
    const end = terminal(events);
    expect(end).toMatchObject({ type: 'completed', text: 'Hello there!', stopReason: 'end_turn' });
    // Cache reads and writes count as input; reads are the cached share.
    expect(end.receipt.usage).toEqual({
      inputTokens: 160 + 11,
      outputTokens: 46,
      cachedInputTokens: 30,
      reasoningTokens: 0,
    });
  });
});

describe('anthropic stop reasons', () => {
  it('fails a paused turn (pause_turn) with bad_response instead of completing with the paused text', async () => {
    const { provider } = await anthropic((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const usage = { input_tokens: 10, output_tokens: 2 };
      const events = [
        { type: 'message_start', message: { id: 'm', role: 'assistant', content: [], usage } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'searching...' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'pause_turn' }, usage },
        { type: 'message_stop' },
      ];
      for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      res.end();
    });
    const end = terminal(await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' }))));
    expect(end).toMatchObject({
      type: 'error',
      error: {
        code: 'bad_response',
        message: expect.stringContaining('pause_turn'),
        fields: { stopReason: 'pause_turn' },
      },
      receipt: { usage: { inputTokens: 10, outputTokens: 2 }, requestsWithoutUsage: 0 },
    });
  });
});

describe('anthropic events out of order', () => {
  it('fails a stream that starts a content block twice at one index, instead of dropping the first block', async () => {
    const { provider } = await anthropic((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const usage = { input_tokens: 10, output_tokens: 5 };
      const events = [
        { type: 'message_start', message: { id: 'm', role: 'assistant', content: [], usage } },
        {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'tool_use', id: 't1', name: 'read_file', input: {} },
        },
        {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: '{"path":"a.md"}' },
        },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'the call is gone' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage },
        { type: 'message_stop' },
      ];
      for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      res.end();
    });
    const events = await collect(
      provider.turn(turnRequest({ model: 'claude-sonnet-4-6', tools: [READ_FILE] })),
      () => 'contents',
    );
    // Before, the text block replaced the tool_use block: the turn completed with no tool call.
    expect(toolCallsOf(events)).toEqual([]);
    expect(terminal(events)).toMatchObject({
      type: 'error',
      error: {
        code: 'bad_response',
        message: expect.stringContaining('block 0, which was already started'),
        fields: { provider: 'anthropic', status: 200 },
      },
    });
  });

  // Before, late text was appended to the answer the server had closed, and a late tool_use
  // fragment was dropped (the call was parsed at the stop), both without a word.
  it('fails a stream that sends a delta for a block after its content_block_stop', async () => {
    const late = {
      text: [
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' (late)' } },
      ],
      tool_use: [
        {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'tool_use', id: 't1', name: 'read_file', input: {} },
        },
        {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: '{"path"' },
        },
        { type: 'content_block_stop', index: 0 },
        {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: ':"a.md"}' },
        },
      ],
    };
    for (const [kind, blocks] of Object.entries(late)) {
      const { provider } = await anthropic((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const usage = { input_tokens: 10, output_tokens: 5 };
        const events = [
          { type: 'message_start', message: { id: 'm', role: 'assistant', content: [], usage } },
          ...blocks,
          { type: 'message_delta', delta: { stop_reason: kind === 'text' ? 'end_turn' : 'tool_use' }, usage },
          { type: 'message_stop' },
        ];
        for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
        res.end();
      });
      const events = await collect(
        provider.turn(turnRequest({ model: 'claude-sonnet-4-6', tools: [READ_FILE] })),
        () => 'contents',
      );
      expect(toolCallsOf(events), kind).toEqual([]);
      expect(terminal(events), kind).toMatchObject({
        type: 'error',
        error: {
          code: 'bad_response',
          message: expect.stringContaining('block 0 after its content_block_stop'),
          fields: { provider: 'anthropic', status: 200 },
        },
      });
      await server?.close();
      server = undefined;
    }
  });

  // Before, both were accepted without a word: the events are out of order, so what the answer
  // holds cannot be trusted.
  it('fails a stream that stops a block never started, or stops one twice', async () => {
    const text = [
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_stop', index: 0 },
    ];
    const cases = {
      'which was never started': [...text, { type: 'content_block_stop', index: 1 }],
      'which was already stopped': [...text, { type: 'content_block_stop', index: 0 }],
    };
    for (const [message, blocks] of Object.entries(cases)) {
      const { provider } = await anthropic((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const usage = { input_tokens: 10, output_tokens: 5 };
        const events = [
          { type: 'message_start', message: { id: 'm', role: 'assistant', content: [], usage } },
          ...blocks,
          { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage },
          { type: 'message_stop' },
        ];
        for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
        res.end();
      });
      const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
      expect(terminal(events), message).toMatchObject({
        type: 'error',
        error: {
          code: 'bad_response',
          message: expect.stringContaining(
            `A content_block_stop arrived for block ${message.includes('never') ? 1 : 0}, ${message}`,
          ),
          fields: { provider: 'anthropic', status: 200 },
        },
      });
      await server?.close();
      server = undefined;
    }
  });
});
