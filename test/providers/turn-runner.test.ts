/** The provider-neutral turn: one terminal event, iteration rules, timeouts, cancellation. */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/abort.ts';
import { ScriptedProvider } from '../../src/providers/scripted.ts';
import { createTurn, type ExchangeContext, type TurnDriver } from '../../src/providers/turn-runner.ts';
import { collect, terminal, turnRequest } from './helpers.ts';

function driver(exchange: TurnDriver['exchange'], timeoutMs?: number): TurnDriver {
  return { provider: 'test', model: 'm', price: undefined, timeoutMs, exchange };
}

/** An exchange that never answers until its signal aborts, recording the signal. */
function hanging(signals: AbortSignal[]): TurnDriver['exchange'] {
  return (_results, ctx: ExchangeContext) =>
    ctx.withTimeout(
      (signal) =>
        new Promise((_resolve, reject) => {
          signals.push(signal);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    );
}

describe('turn runner', () => {
  it('sends nothing until the consumer starts iterating', async () => {
    const model = new ScriptedProvider([{ text: 'hi' }]);
    const turn = model.turn(turnRequest());
    expect(model.requests).toHaveLength(0);
    await collect(turn);
    expect(model.requests).toHaveLength(1);
  });

  it('refuses a second iteration', async () => {
    const turn = new ScriptedProvider([{ text: 'hi' }]).turn(turnRequest());
    await collect(turn);
    expect(() => turn[Symbol.asyncIterator]()).toThrow(
      expect.objectContaining({ code: 'turn_already_iterated' }),
    );
  });

  it('turns an unexpected exception into an error event instead of throwing', async () => {
    const events = await collect(
      createTurn(
        driver(async () => {
          throw new TypeError('boom');
        }),
      ),
    );
    expect(terminal(events)).toMatchObject({ type: 'error', error: { code: 'internal', message: 'boom' } });
  });

  it('ends with response_too_large when one response asks for more tool calls than it may, running none', async () => {
    const calls = (count: number) =>
      Array.from({ length: count }, (_, i) => ({
        id: `c${i}`,
        name: 'noop',
        arguments: {},
        rawArguments: '{}',
      }));
    const over = await collect(
      createTurn(driver(async () => ({ text: '', toolCalls: calls(513), stopReason: 'tool_calls' }))),
    );
    expect(over.some((event) => event.type === 'tool_call')).toBe(false);
    expect(terminal(over)).toMatchObject({
      type: 'error',
      error: { code: 'response_too_large', fields: { maxToolCalls: 512, toolCalls: 513 } },
    });
    // 512 are fine: the first one reaches the consumer.
    const turn = createTurn(
      driver(async () => ({ text: '', toolCalls: calls(512), stopReason: 'tool_calls' })),
    );
    for await (const event of turn) {
      if (event.type === 'tool_call') {
        expect(event.id).toBe('c0');
        break;
      }
    }
  });

  it('ends with timeout when a request outlives timeoutMs', async () => {
    const signals: AbortSignal[] = [];
    const end = terminal(await collect(createTurn(driver(hanging(signals), 50))));
    expect(end).toMatchObject({
      type: 'error',
      error: { code: 'timeout', fields: { provider: 'test', timeoutMs: 50 } },
    });
    expect(signals[0]?.aborted).toBe(true);
  });

  it('a request limit past the longest timer delay does not end the request at once', async () => {
    const end = terminal(
      await collect(
        createTurn(
          driver(
            (_results, ctx) =>
              ctx.withTimeout(async (signal) => {
                await sleep(30, signal);
                return { text: 'in time', toolCalls: [], stopReason: 'end_turn' as const };
              }),
            2 ** 31,
          ),
        ),
      ),
    );
    expect(end).toMatchObject({ type: 'completed', text: 'in time' });
  });

  it('aborts the request when the consumer stops iterating early', async () => {
    const signals: AbortSignal[] = [];
    const turn = createTurn(
      driver(async (results, ctx) => {
        ctx.emit({ type: 'text_delta', text: 'partial' });
        return hanging(signals)(results, ctx);
      }),
    );
    for await (const event of turn) {
      expect(event.type).toBe('text_delta');
      break;
    }
    expect(signals[0]?.aborted).toBe(true);
  });

  it('cancels a turn waiting for tool results, without leaking its listener', async () => {
    const controller = new AbortController();
    const turn = new ScriptedProvider([{ toolCalls: [{ name: 'slow_tool' }] }]).turn(
      turnRequest(),
      controller.signal,
    );
    const events = await collect(turn, () => {
      controller.abort(new Error('agent cancelled'));
      return undefined;
    });
    expect(events.map((event) => event.type)).toEqual(['response', 'tool_call', 'error']);
    expect(terminal(events)).toMatchObject({ error: { code: 'cancelled' } });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('ignores tool calls of a response cut off by the output limit', async () => {
    const model = new ScriptedProvider([
      { text: 'partial', toolCalls: [{ name: 'read_file' }], stopReason: 'length' },
    ]);
    const events = await collect(model.turn(turnRequest()));
    expect(events.map((event) => event.type)).toEqual(['text_delta', 'response', 'completed']);
    expect(events[1]).toMatchObject({ type: 'response', toolCalls: [], stopReason: 'length' });
    expect(terminal(events)).toMatchObject({ text: 'partial', stopReason: 'length' });
  });

  it('rejects a response that uses one tool call id twice', async () => {
    const model = new ScriptedProvider([
      {
        toolCalls: [
          { id: 'same', name: 'a' },
          { id: 'same', name: 'b' },
        ],
      },
    ]);
    expect(terminal(await collect(model.turn(turnRequest())))).toMatchObject({
      error: { code: 'bad_response' },
    });
  });

  it('ends every model request with a response event carrying that request’s own receipt', async () => {
    const model = new ScriptedProvider([
      { text: 'a', toolCalls: [{ name: 'f' }], usage: { inputTokens: 10, outputTokens: 2 } },
      { text: 'b' },
    ]);
    const events = await collect(model.turn(turnRequest({ model: 'gpt-4o' })), () => 'ok');
    const responses = events.filter((event) => event.type === 'response');
    expect(responses).toMatchObject([
      {
        index: 0,
        text: 'a',
        stopReason: 'tool_calls',
        toolCalls: [{ name: 'f' }],
        receipt: { requests: 1, usage: { inputTokens: 10, outputTokens: 2 }, requestsWithoutUsage: 0 },
      },
      {
        index: 1,
        text: 'b',
        stopReason: 'end_turn',
        receipt: { requests: 1, usage: { inputTokens: 0 }, requestsWithoutUsage: 1, costUsd: undefined },
      },
    ]);
    expect(events.map((event) => event.type)).toEqual([
      'text_delta',
      'usage',
      'response',
      'tool_call',
      'text_delta',
      'response',
      'completed',
    ]);
    expect(terminal(events)).toMatchObject({ receipt: { requests: 2, requestsWithoutUsage: 1 } });
  });

  it('bounds the output of any driver, scripted ones included', async () => {
    const events = await collect(
      createTurn({
        ...driver(async (_results, ctx) => {
          for (;;) ctx.emit({ type: 'text_delta', text: 'x'.repeat(1000) });
        }),
        maxOutputChars: 5000,
      }),
    );
    expect(terminal(events)).toMatchObject({
      type: 'error',
      error: { code: 'response_too_large', fields: { maxOutputChars: 5000 } },
      request: { requests: 1 },
    });
    expect(events.filter((event) => event.type === 'text_delta')).toHaveLength(5);
  });
});
