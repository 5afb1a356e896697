/**
 * Usage a server reports is untrusted like the rest of its answer: a negative count would lower an
 * agent's and a whole run's spend (one agent reporting -1e15 tokens let the others pass the run's
 * budget), and a count sent as a string is no count. A usage object without a readable input and
 * output count is no usage at all, so troupe estimates the request as documented; one with a
 * single readable side keeps it and estimates only the other; detail counts (cached, reasoning)
 * are bounded by the count they are part of.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import {
  DEFAULT_ANTHROPIC_MAX_TOKENS,
  HIDDEN_REASONING_TOKEN_ALLOWANCE,
  INPUT_TOKEN_OVERHEAD,
  OUTPUT_TOKEN_SLACK,
  TOOL_CALL_TOKEN_ALLOWANCE,
} from '../../src/providers/constants.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { TurnEvent } from '../../src/providers/types.ts';
import { collect, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function openAIAnswer(res: ServerResponse, usage: unknown): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`,
  );
  res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

function anthropicAnswer(res: ServerResponse, usage: unknown): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const events = [
    { type: 'message_start', message: { id: 'm', role: 'assistant', content: [], usage } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage },
    { type: 'message_stop' },
  ];
  for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

function usagesOf(events: readonly TurnEvent[]) {
  return events.flatMap((event) => (event.type === 'usage' ? [event.usage] : []));
}

const LIES: readonly [string, unknown][] = [
  ['negative', { prompt_tokens: -1e15, completion_tokens: -5, input_tokens: -1e15, output_tokens: -5 }],
  ['strings', { prompt_tokens: 'NaN', completion_tokens: '1e9', input_tokens: '400000', output_tokens: 'x' }],
  // 1e308 tokens made a run's total Infinity, which "spent" its budget and cancelled every agent.
  ['huge', { prompt_tokens: 1e308, completion_tokens: 2 ** 60, input_tokens: 1e308, output_tokens: 1.5 }],
];

describe('usage a server lies about', () => {
  for (const [name, usage] of LIES) {
    it(`openai: ${name} counts are no usage, so the request counts as unreported`, async () => {
      server = await startServer((_req, res) => openAIAnswer(res, usage));
      const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const events = await collect(provider.turn(turnRequest()));
      const end = terminal(events);
      expect(end.type).toBe('completed');
      expect(usagesOf(events)).toEqual([]);
      expect(end.receipt.requestsWithoutUsage).toBe(1);
    });

    it(`anthropic: ${name} counts are no usage, so the request counts as unreported`, async () => {
      server = await startServer((_req, res) => anthropicAnswer(res, usage));
      const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
      const end = terminal(events);
      expect(end.type).toBe('completed');
      expect(usagesOf(events)).toEqual([]);
      expect(end.receipt.requestsWithoutUsage).toBe(1);
    });
  }

  const ONE_SIDE: readonly [
    string,
    Record<string, unknown>,
    Record<string, unknown>,
    'input' | 'output',
    number,
  ][] = [
    [
      'a negative output',
      { prompt_tokens: 12, completion_tokens: -3 },
      { input_tokens: 12, output_tokens: -3 },
      'output',
      12,
    ],
    [
      'a NaN input',
      { prompt_tokens: 'NaN', completion_tokens: 5 },
      { input_tokens: 'NaN', output_tokens: 5 },
      'input',
      5,
    ],
    [
      'an absurd output',
      { prompt_tokens: 2200, completion_tokens: 1e308 },
      { input_tokens: 2200, output_tokens: 1e308 },
      'output',
      2200,
    ],
    ['no output at all', { prompt_tokens: 2200 }, { input_tokens: 2200 }, 'output', 2200],
    ['no input at all', { completion_tokens: 5 }, { output_tokens: 5 }, 'input', 5],
  ];
  for (const [name, openAIUsage, anthropicUsage, side, kept] of ONE_SIDE) {
    // Both sides used to be estimated, losing the count the server did report; counting the
    // unreadable side as 0 instead would let a server zero out the input of every request.
    it(`${name}: the readable side is kept, and only the ${side} is estimated and marked so`, async () => {
      server = await startServer((_req, res) => openAIAnswer(res, openAIUsage));
      const openai = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const openAIEvents = await collect(openai.turn(turnRequest()));
      await server.close();
      server = await startServer((_req, res) => anthropicAnswer(res, anthropicUsage));
      const anthropic = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const anthropicEvents = await collect(anthropic.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
      for (const events of [openAIEvents, anthropicEvents]) {
        const [usage, ...more] = usagesOf(events);
        expect(more).toEqual([]);
        expect(usage).toMatchObject({ estimated: true, estimatedSide: side });
        const readable = side === 'input' ? usage?.outputTokens : usage?.inputTokens;
        const estimated = side === 'input' ? usage?.inputTokens : usage?.outputTokens;
        expect(readable).toBe(kept);
        // 'hi' is one token of output; the input is the request body at ~4 characters a token.
        if (side === 'output') expect(estimated).toBe(1);
        else expect(estimated).toBeGreaterThan(10);
        const end = terminal(events);
        expect(end.receipt.requestsWithoutUsage).toBe(0);
        expect(end.receipt.usage).toEqual(usage);
      }
    });
  }

  // A server claimed 5,000,000 input tokens for a 9 KB request: `troupe run` printed
  // "5.0M of 1.0M tokens used" and charged $15, and a run's budget went with it.
  for (const provider of ['openai', 'anthropic'] as const) {
    it(`${provider}: an input count above the request's bytes (plus INPUT_TOKEN_OVERHEAD) is estimated, one at it is kept`, async () => {
      const answer = provider === 'openai' ? openAIAnswer : anthropicAnswer;
      const claims: number[] = [];
      let offset = 0;
      const started = await startServer((_req, res, index) => {
        const bytes = Buffer.byteLength(started.received[index]?.body ?? '', 'utf8');
        const claimed = bytes + INPUT_TOKEN_OVERHEAD + offset;
        claims.push(claimed);
        const usage =
          provider === 'openai'
            ? {
                prompt_tokens: claimed,
                completion_tokens: 3,
                prompt_tokens_details: { cached_tokens: claimed },
              }
            : { input_tokens: claimed, output_tokens: 3 };
        answer(res, usage);
      });
      server = started;
      const make = () =>
        provider === 'openai'
          ? new OpenAIProvider({ baseURL: started.url, apiKey: 'k', maxRetries: 0 })
          : new AnthropicProvider({ baseURL: started.url, apiKey: 'k', maxRetries: 0 });
      const request = turnRequest(provider === 'anthropic' ? { model: 'claude-sonnet-4-6' } : {});
      const [atBound] = usagesOf(await collect(make().turn(request)));
      expect(atBound).toMatchObject({ inputTokens: claims[0], outputTokens: 3 });
      expect(atBound?.estimated).toBeUndefined();
      offset = 1;
      const [above] = usagesOf(await collect(make().turn(request)));
      expect(above).toMatchObject({ outputTokens: 3, estimated: true, estimatedSide: 'input' });
      // Estimated from the request body at ~4 characters a token, far below the claim.
      expect(above?.inputTokens).toBeLessThan(Buffer.byteLength(started.received[1]?.body ?? '', 'utf8'));
      expect(above?.cachedInputTokens).toBe(0);
    });
  }

  // 1e15 output tokens is a safe integer: it spent any budget in one step. A request that caps
  // its output (Anthropic always does) bounds what its server can truly count.
  it("an output count above the request's output cap (plus OUTPUT_TOKEN_SLACK) is estimated, one at it is kept", async () => {
    const anthropicCap = DEFAULT_ANTHROPIC_MAX_TOKENS + OUTPUT_TOKEN_SLACK;
    const cases = [
      ['anthropic', anthropicCap, undefined],
      ['openai', 100 + OUTPUT_TOKEN_SLACK, 100],
    ] as const;
    for (const [name, bound, maxOutputTokens] of cases) {
      for (const output of [bound, bound + 1, 1e15]) {
        server = await startServer((_req, res) =>
          name === 'openai'
            ? openAIAnswer(res, {
                prompt_tokens: 12,
                completion_tokens: output,
                completion_tokens_details: { reasoning_tokens: output },
              })
            : anthropicAnswer(res, { input_tokens: 12, output_tokens: output }),
        );
        const options = { baseURL: server.url, apiKey: 'k', maxRetries: 0 };
        const provider = name === 'openai' ? new OpenAIProvider(options) : new AnthropicProvider(options);
        const request = turnRequest({
          ...(name === 'anthropic' ? { model: 'claude-sonnet-4-6' } : {}),
          ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
        });
        const [usage] = usagesOf(await collect(provider.turn(request)));
        if (output === bound) {
          expect(usage, `${name} ${output}`).toMatchObject({ inputTokens: 12, outputTokens: output });
          expect(usage?.estimated).toBeUndefined();
        } else {
          // 'hi' is one token of output.
          expect(usage, `${name} ${output}`).toMatchObject({
            inputTokens: 12,
            outputTokens: 1,
            reasoningTokens: 0,
            estimated: true,
            estimatedSide: 'output',
          });
        }
        await server.close();
        server = undefined;
      }
    }
  });

  // Without a cap, 1e15 output tokens for 'hi' were taken and spent any budget in one step. What
  // streamed bounds the count: a token a UTF-8 byte (2 here) plus OUTPUT_TOKEN_SLACK, plus the
  // hidden reasoning the server reports, up to HIDDEN_REASONING_TOKEN_ALLOWANCE.
  it('openai: without an output cap an output count above what streamed (and its reported hidden reasoning) is estimated', async () => {
    const streamed = 2 + OUTPUT_TOKEN_SLACK;
    const cases: readonly [output: number, reasoning: number, kept: boolean][] = [
      [streamed, 0, true],
      [streamed + 1, 0, false],
      [1e15, 0, false],
      // A reasoning model's hidden thinking: counted, never streamed.
      [50_000, 49_998, true],
      [streamed + HIDDEN_REASONING_TOKEN_ALLOWANCE, 1e15, true],
      [streamed + HIDDEN_REASONING_TOKEN_ALLOWANCE + 1, 1e15, false],
      [1e15, 1e15, false],
    ];
    for (const [output, reasoning, kept] of cases) {
      server = await startServer((_req, res) =>
        openAIAnswer(res, {
          prompt_tokens: 12,
          completion_tokens: output,
          completion_tokens_details: { reasoning_tokens: reasoning },
        }),
      );
      const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const [usage] = usagesOf(await collect(provider.turn(turnRequest())));
      if (kept) {
        expect(usage, `${output} ${reasoning}`).toMatchObject({ inputTokens: 12, outputTokens: output });
        expect(usage?.estimated).toBeUndefined();
      } else {
        expect(usage, `${output} ${reasoning}`).toMatchObject({
          inputTokens: 12,
          outputTokens: 1,
          reasoningTokens: 0,
          estimated: true,
          estimatedSide: 'output',
        });
      }
      await server.close();
      server = undefined;
    }
  });

  // The bound was 3 tokens a UTF-16 character, 3 times too loose for ASCII: no tokenizer makes
  // more than one token of a byte. Non-ASCII text streams more bytes a character, and a tool
  // call's name and wrapper are generated but not streamed as output.
  it('openai: without an output cap the output bound is the UTF-8 bytes that streamed, plus an allowance a tool call', async () => {
    const cases: readonly [delta: Record<string, unknown>, bytes: number, calls: number][] = [
      [{ content: 'hello world' }, 11, 0],
      // 2 UTF-16 characters of 3 bytes each.
      [{ content: '日本' }, 6, 0],
      // One character outside the BMP: 2 UTF-16 code units, 4 bytes.
      [{ content: '😀' }, 4, 0],
      [{ tool_calls: [{ index: 0, id: 'c', function: { name: 'nap', arguments: '{}' } }] }, 2, 1],
    ];
    for (const [delta, bytes, calls] of cases) {
      const bound = bytes + calls * TOOL_CALL_TOKEN_ALLOWANCE + OUTPUT_TOKEN_SLACK;
      for (const output of [bound, bound + 1]) {
        server = await startServer((_req, res, index) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // The tool call's answer is sent back in a second request, answered without usage.
          const answer = index === 0 ? delta : { content: 'done' };
          res.write(
            `data: ${JSON.stringify({ choices: [{ index: 0, delta: answer, finish_reason: 'stop' }] })}\n\n`,
          );
          if (index === 0)
            res.write(
              `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 12, completion_tokens: output } })}\n\n`,
            );
          res.end('data: [DONE]\n\n');
        });
        const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
        const [usage] = usagesOf(await collect(provider.turn(turnRequest()), () => 'ok'));
        const label = `${JSON.stringify(delta)} ${output}`;
        if (output === bound) {
          expect(usage, label).toMatchObject({ inputTokens: 12, outputTokens: output });
          expect(usage?.estimated, label).toBeUndefined();
        } else {
          expect(usage, label).toMatchObject({ inputTokens: 12, estimated: true, estimatedSide: 'output' });
          expect(usage?.outputTokens, label).toBeLessThan(bound);
        }
        await server.close();
        server = undefined;
      }
    }
  });

  it('openai: cached input is at most the input, reasoning at most the output', async () => {
    server = await startServer((_req, res) =>
      openAIAnswer(res, {
        prompt_tokens: 10,
        completion_tokens: 4,
        prompt_tokens_details: { cached_tokens: 1e9 },
        completion_tokens_details: { reasoning_tokens: 1e9 },
      }),
    );
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest()));
    expect(usagesOf(events)).toEqual([
      { inputTokens: 10, outputTokens: 4, cachedInputTokens: 10, reasoningTokens: 4 },
    ]);
  });

  it('anthropic: an input whose cache counts add up past 2^53 is no count, so the input is estimated', async () => {
    const usage = {
      input_tokens: 10,
      cache_read_input_tokens: 2 ** 52,
      cache_creation_input_tokens: 2 ** 52,
    };
    server = await startServer((_req, res) => anthropicAnswer(res, { ...usage, output_tokens: 6 }));
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const [reported] = usagesOf(await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' }))));
    expect(reported).toMatchObject({ outputTokens: 6, estimated: true, estimatedSide: 'input' });
    expect(Number.isSafeInteger(reported?.inputTokens)).toBe(true);
    expect(reported?.cachedInputTokens).toBeLessThanOrEqual(reported?.inputTokens ?? 0);
  });

  it('openai: usage sent twice is a running total: the later count replaces the earlier, an unreadable one keeps it', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunks = [
        {
          choices: [{ index: 0, delta: { content: 'hi' } }],
          usage: { prompt_tokens: 10, completion_tokens: 1 },
        },
        {
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 2 },
        },
        { choices: [], usage: { prompt_tokens: 'lots', completion_tokens: 3 } },
      ];
      for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest()));
    expect(usagesOf(events)).toEqual([
      { inputTokens: 10, outputTokens: 3, cachedInputTokens: 0, reasoningTokens: 0 },
    ]);
  });

  it('anthropic: input read at the start and output at the end is one readable usage', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = [
        { type: 'message_start', message: { id: 'm', content: [], usage: { input_tokens: 30 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 7 } },
        { type: 'message_stop' },
      ];
      for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      res.end();
    });
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
    expect(usagesOf(events)).toEqual([
      { inputTokens: 30, outputTokens: 7, cachedInputTokens: 0, reasoningTokens: 0 },
    ]);
  });
});

// Python's json.dumps writes NaN and Infinity bare, which JSON.parse refuses: a usage chunk with
// one after a finished answer failed the agent with bad_response, and the whole answer was lost.
describe("usage a Python server writes as NaN or Infinity (json.dumps' default)", () => {
  const pythonUsage = (usage: string): string => `data: {"choices": [], "usage": ${usage}}\n\n`;
  const finished = (text: string): string =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: 'stop' }] })}\n\n`;

  it('openai: the answer is kept and the unreadable side estimated, streamed or in one JSON body', async () => {
    for (const bad of ['NaN', 'Infinity', '-Infinity']) {
      server = await startServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(finished('hi'));
        res.write(pythonUsage(`{"prompt_tokens": 12, "completion_tokens": ${bad}}`));
        res.end('data: [DONE]\n\n');
      });
      const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
      const events = await collect(provider.turn(turnRequest()));
      expect(terminal(events), bad).toMatchObject({ type: 'completed', text: 'hi' });
      expect(usagesOf(events), bad).toEqual([
        expect.objectContaining({
          inputTokens: 12,
          outputTokens: 1,
          estimated: true,
          estimatedSide: 'output',
        }),
      ]);
      await server.close();
    }
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const message = { role: 'assistant', content: 'hi' };
      const choice = JSON.stringify({ index: 0, message, finish_reason: 'stop' });
      res.end(`{"choices": [${choice}], "usage": {"prompt_tokens": NaN, "completion_tokens": NaN}}`);
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0, stream: false });
    const events = await collect(provider.turn(turnRequest()));
    const end = terminal(events);
    expect(end).toMatchObject({ type: 'completed', text: 'hi' });
    expect(usagesOf(events)).toEqual([]);
    expect(end.receipt.requestsWithoutUsage).toBe(1);
  });

  it('openai: only bare NaN and Infinity are read as null, never the same words inside a string', async () => {
    const text = 'NaN, "Infinity" and -Infinity\\';
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = JSON.stringify({
        choices: [{ index: 0, delta: { content: text }, finish_reason: 'stop' }],
      });
      res.write(`data: ${chunk.slice(0, -1)}, "usage": {"prompt_tokens": 12, "completion_tokens": NaN}}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest()));
    expect(terminal(events)).toMatchObject({ type: 'completed', text });
    expect(usagesOf(events)).toEqual([expect.objectContaining({ inputTokens: 12, estimatedSide: 'output' })]);
  });

  it("anthropic: a NaN in message_delta's usage keeps the answer and estimates the output", async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = [
        { type: 'message_start', message: { id: 'm', content: [], usage: { input_tokens: 30 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
        { type: 'content_block_stop', index: 0 },
      ];
      for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      res.write(
        'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": NaN}}\n\n',
      );
      res.end('event: message_stop\ndata: {"type": "message_stop"}\n\n');
    });
    const provider = new AnthropicProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const events = await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-6' })));
    expect(terminal(events)).toMatchObject({ type: 'completed', text: 'hi' });
    expect(usagesOf(events)).toEqual([
      expect.objectContaining({ inputTokens: 30, outputTokens: 1, estimated: true, estimatedSide: 'output' }),
    ]);
  });

  it('a body that is not JSON even so is still bad_response', async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(finished('hi'));
      res.write(pythonUsage('{"prompt_tokens": NaN, "completion_tokens": nan}'));
      res.end('data: [DONE]\n\n');
    });
    const provider = new OpenAIProvider({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const end = terminal(await collect(provider.turn(turnRequest())));
    expect(end).toMatchObject({
      type: 'error',
      error: { code: 'bad_response', message: expect.stringContaining('"completion_tokens": nan') },
    });
  });
});
