/** The openai provider's requests, continuations and options, against a local server. */
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAIProvider } from '../../src/providers/openai.ts';
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
  textOf,
  toolCallsOf,
  turnRequest,
} from './helpers.ts';

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

/** Serves the named recordings in order, one per request. */
function serveInOrder(...names: string[]): Handler {
  return (_req, res, index) => {
    const name = names[index] ?? names.at(-1) ?? '';
    return replay(
      res,
      corpusFile(name),
      name.endsWith('.json') ? 'application/json' : 'text/event-stream',
      index + 1,
    );
  };
}

async function provider(handler: Handler, options: ConstructorParameters<typeof OpenAIProvider>[0] = {}) {
  server = await startServer(handler);
  return {
    server,
    provider: new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0, ...options }),
  };
}

function lastOf(events: readonly TurnEvent[]) {
  return terminal(events);
}

describe('openai requests', () => {
  it('sends a streaming Chat Completions request with usage, tools and every option', async () => {
    const { server, provider: openai } = await provider(serveInOrder('openai-chat-stream-text.sse'));
    await collect(
      openai.turn(
        turnRequest({
          system: 'Be brief.',
          input: 'Weather?',
          tools: [READ_FILE],
          toolChoice: 'required',
          maxOutputTokens: 300,
          temperature: 0.2,
          reasoningEffort: 'low',
        }),
      ),
    );
    expect(server.received[0]?.json).toEqual({
      model: 'gpt-4o',
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: READ_FILE }],
      tool_choice: 'required',
      max_completion_tokens: 300,
      temperature: 0.2,
      reasoning_effort: 'low',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather?' },
      ],
    });
  });

  it('maps every tool choice and leaves tools out when there are none', async () => {
    const { server, provider: openai } = await provider(serveInOrder('openai-chat-stream-text.sse'));
    const choices: (ToolChoice | undefined)[] = ['auto', 'none', { tool: 'read_file' }, undefined];
    for (const toolChoice of choices)
      await collect(openai.turn(turnRequest({ tools: [READ_FILE], toolChoice })));
    await collect(openai.turn(turnRequest({ tools: [], toolChoice: 'required' })));
    expect(server.received.map((request) => request.json.tool_choice)).toEqual([
      'auto',
      'none',
      { type: 'function', function: { name: 'read_file' } },
      undefined,
      undefined,
    ]);
    expect(server.received[4]?.json.tools).toBeUndefined();
  });

  it('uses max_tokens when configured for older compatible servers', async () => {
    const { server, provider: openai } = await provider(serveInOrder('openai-chat-stream-text.sse'), {
      maxTokensParam: 'max_tokens',
    });
    await collect(openai.turn(turnRequest({ maxOutputTokens: 50 })));
    expect(server.received[0]?.json).toMatchObject({ max_tokens: 50 });
    expect(server.received[0]?.json.max_completion_tokens).toBeUndefined();
  });

  it('rejects an unsupported reasoning effort before sending anything', async () => {
    const { server, provider: openai } = await provider(serveInOrder('openai-chat-stream-text.sse'));
    const end = lastOf(await collect(openai.turn(turnRequest({ reasoningEffort: 'max' }))));
    expect(end.type).toBe('error');
    if (end.type !== 'error') return;
    expect(end.error).toMatchObject({
      code: 'bad_request',
      fields: { provider: 'openai', reasoningEffort: 'max' },
    });
    expect(end.error.message).toContain('none, minimal, low, medium, high, xhigh');
    expect(end.receipt.requests).toBe(0);
    expect(server.received).toHaveLength(0);
  });

  it('asks for one JSON body when streaming is off', async () => {
    const { server, provider: openai } = await provider(
      serveInOrder('openai-chat-response-parallel-tool-calls.json'),
      {
        stream: false,
      },
    );
    const turn = openai.turn(turnRequest({ tools: [READ_FILE] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'ok';
    });
    expect(server.received[0]?.json.stream).toBeUndefined();
    expect(server.received[0]?.json.stream_options).toBeUndefined();
    expect(toolCallsOf(events)).toHaveLength(2);
  });

  it('reads base URL and key from the environment', async () => {
    server = await startServer(serveInOrder('openai-chat-stream-text.sse'));
    const openai = new OpenAIProvider({
      env: { OPENAI_BASE_URL: `${server.url}/v1/`, OPENAI_API_KEY: 'env-key' },
    });
    await collect(openai.turn(turnRequest()));
    expect(server.received[0]?.url).toBe('/v1/chat/completions');
    expect(server.received[0]?.headers.authorization).toBe('Bearer env-key');
  });

  it('sends no authorization header to a keyless compatible server', async () => {
    server = await startServer(serveInOrder('openai-chat-stream-text.sse'));
    const openai = new OpenAIProvider({ baseURL: server.url, env: {} });
    await collect(openai.turn(turnRequest()));
    expect(server.received[0]?.headers.authorization).toBeUndefined();
  });

  it('refuses to start without a key for the official endpoint, and checks option types', () => {
    expect(() => new OpenAIProvider({ env: {} })).toThrow(
      expect.objectContaining({ code: 'missing_api_key' }),
    );
    expect(() => new OpenAIProvider({ apiKey: 'k', maxRetries: -1 })).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        fields: { provider: 'openai', option: 'maxRetries' },
      }),
    );
    // Past the longest timer delay Node fires at once: every request failed `timeout` at once.
    for (const option of ['timeoutMs', 'idleTimeoutMs']) {
      expect(() => new OpenAIProvider({ apiKey: 'k', [option]: 2 ** 31 })).toThrow(
        expect.objectContaining({ code: 'invalid_option', fields: { provider: 'openai', option } }),
      );
    }
    expect(() => new OpenAIProvider({ apiKey: 'k', maxTokensParam: 'n_predict' as 'max_tokens' })).toThrow(
      /Expected `maxTokensParam` to be one of `max_completion_tokens`, `max_tokens`, got `"n_predict"` \(string\)/,
    );
  });
});

describe('openai tool rounds', () => {
  it('sends the results back in the native format once every call is answered, in any order', async () => {
    const { server, provider: openai } = await provider(
      serveInOrder('openai-chat-stream-parallel-tool-calls.sse', 'openai-chat-stream-text.sse'),
    );
    const turn = openai.turn(turnRequest({ tools: [READ_FILE] }));
    const seen: string[] = [];
    const events: TurnEvent[] = [];
    for await (const event of turn) {
      events.push(event);
      if (event.type !== 'tool_call') continue;
      seen.push(event.id);
      // Answer the second call first, and the first one only after a tick.
      if (seen.length === 2) {
        turn.respond('call_DNYTawLBoN8fj3KN6qU9N1Ou', 'AAPL: 100');
        setImmediate(() => turn.respond('call_JMW1whyEaYG438VE1OIflxA2', 'Edinburgh: 12C'));
      }
    }
    expect(server.received).toHaveLength(2);
    expect(server.received[1]?.json.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hello.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_JMW1whyEaYG438VE1OIflxA2',
            type: 'function',
            function: {
              name: 'GetWeatherArgs',
              arguments: '{"city": "Edinburgh", "country": "GB", "units": "c"}',
            },
          },
          {
            id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou',
            type: 'function',
            function: { name: 'get_stock_price', arguments: '{"ticker": "AAPL", "exchange": "NASDAQ"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_JMW1whyEaYG438VE1OIflxA2', content: 'Edinburgh: 12C' },
      { role: 'tool', tool_call_id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou', content: 'AAPL: 100' },
    ]);
    const end = terminal(events);
    expect(end).toMatchObject({ type: 'completed', stopReason: 'end_turn' });
    expect(end.type === 'completed' && end.text).toBe(textOf(events));
    expect(events.filter((event) => event.type === 'usage')).toHaveLength(2);
    expect(end.receipt).toMatchObject({
      requests: 2,
      usage: { inputTokens: 149 + 14, outputTokens: 60 + 30, cachedInputTokens: 0, reasoningTokens: 0 },
    });
    expect(end.receipt.costUsd).toBeCloseTo((163 * 2.5 + 90 * 10) / 1e6, 12);
  });

  it('ends with tool_calls and sends nothing more after stop()', async () => {
    const { server, provider: openai } = await provider(
      serveInOrder('openai-chat-stream-tool-call.sse', 'openai-chat-stream-text.sse'),
    );
    const turn = openai.turn(turnRequest({ tools: [READ_FILE] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'done';
    });
    expect(terminal(events)).toMatchObject({ type: 'completed', stopReason: 'tool_calls', text: '' });
    expect(server.received).toHaveLength(1);
  });

  it('keeps arguments that are not JSON as a parse error with the raw text', async () => {
    const { provider: openai } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const call = {
        index: 0,
        id: 'call_1',
        type: 'function',
        function: { name: 'read_file', arguments: '{"path": ' },
      };
      res.end(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: 'tool_calls' }] })}\n\ndata: [DONE]\n\n`,
      );
    });
    const turn = openai.turn(turnRequest({ tools: [READ_FILE] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'bad arguments';
    });
    const [call] = toolCallsOf(events);
    expect(call).toMatchObject({ id: 'call_1', arguments: undefined, rawArguments: '{"path": ' });
    expect(call?.parseError).toMatch(/^Arguments are not valid JSON/);
  });

  it('throws on respond() for an unknown call and for a second answer to the same call', async () => {
    const { provider: openai } = await provider(serveInOrder('openai-chat-stream-tool-call.sse'));
    const turn = openai.turn(turnRequest({ tools: [READ_FILE] }));
    const errors: unknown[] = [];
    for await (const event of turn) {
      if (event.type !== 'tool_call') continue;
      try {
        turn.respond('nope', 'x');
      } catch (error) {
        errors.push(error);
      }
      turn.stop();
      // A result that is not a string (JavaScript callers): refused, and the call stays pending.
      try {
        turn.respond(event.id, { lines: 3 } as unknown as string);
      } catch (error) {
        errors.push(error);
      }
      turn.respond(event.id, 'first');
      try {
        turn.respond(event.id, 'second');
      } catch (error) {
        errors.push(error);
      }
    }
    expect(errors.map((error) => (error as { code: string }).code)).toEqual([
      'unknown_tool_call',
      'invalid_tool_result',
      'duplicate_tool_result',
    ]);
  });
});

describe('openai compatible-server variations', () => {
  it('accepts whole tool calls without index or id, and a stop finish reason with tool calls', async () => {
    const { provider: openai } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const calls = [
        { function: { name: 'read_file', arguments: '{"path":"a.md"}' } },
        { function: { name: 'read_file', arguments: '{"path":"b.md"}' } },
      ];
      const chunk = { choices: [{ delta: { role: 'assistant', tool_calls: calls }, finish_reason: 'stop' }] };
      // Ollama-style: no [DONE], the connection just ends after the finish reason.
      res.end(`data: ${JSON.stringify(chunk)}\n\n`);
    });
    const turn = openai.turn(turnRequest({ tools: [READ_FILE] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'ok';
    });
    expect(toolCallsOf(events).map((call) => [call.id, call.arguments])).toEqual([
      ['call_0', { path: 'a.md' }],
      ['call_1', { path: 'b.md' }],
    ]);
    expect(terminal(events)).toMatchObject({ type: 'completed', stopReason: 'tool_calls' });
  });

  it('ends with content_filter when the output is filtered', async () => {
    const { provider: openai } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { choices: [{ index: 0, delta: { content: 'I can' }, finish_reason: 'content_filter' }] };
      res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
    const events = await collect(openai.turn(turnRequest()));
    expect(terminal(events)).toMatchObject({
      type: 'completed',
      text: 'I can',
      stopReason: 'content_filter',
    });
  });

  it('emits reasoning deltas from reasoning_content', async () => {
    const { provider: openai } = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunks = [
        { choices: [{ index: 0, delta: { reasoning_content: 'Think.' } }] },
        { choices: [{ index: 0, delta: { content: 'Answer.' }, finish_reason: 'stop' }] },
      ];
      res.end(`${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`);
    });
    const events = await collect(openai.turn(turnRequest()));
    expect(events.map((event) => event.type)).toEqual([
      'reasoning_delta',
      'text_delta',
      'response',
      'completed',
    ]);
  });
});
