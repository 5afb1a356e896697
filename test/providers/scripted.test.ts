/** The strict scripted model: steps in order, recording, and failure on anything unexpected. */
import { describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../src/providers/scripted.ts';
import type { ToolSpec } from '../../src/tools/types.ts';
import { collect, fakeSleep, terminal, toolCallsOf, turnRequest } from './helpers.ts';

const READ_FILE: ToolSpec = {
  name: 'read_file',
  description: 'Reads a file.',
  parameters: { type: 'object' },
};

describe('scripted provider', () => {
  it('answers each request with the next step and records what it was asked', async () => {
    const model = new ScriptedProvider([
      {
        toolCalls: [
          { name: 'read_file', arguments: { path: 'a.md' } },
          { name: 'read_file', arguments: { path: 'b.md' } },
        ],
      },
      { text: 'Both read.', usage: { inputTokens: 100, outputTokens: 5 } },
    ]);
    const turn = model.turn(turnRequest({ model: 'gpt-4o', tools: [READ_FILE], toolChoice: 'auto' }));
    const events = await collect(turn, (call) => `contents of ${String(call.arguments?.path)}`);
    expect(toolCallsOf(events).map((call) => [call.id, call.arguments])).toEqual([
      ['call_0_0', { path: 'a.md' }],
      ['call_0_1', { path: 'b.md' }],
    ]);
    const end = terminal(events);
    expect(end).toMatchObject({ type: 'completed', text: 'Both read.', stopReason: 'end_turn' });
    expect(end.receipt).toMatchObject({ provider: 'scripted', model: 'gpt-4o', requests: 2 });
    // Only the second request reported usage, so the turn cannot be priced.
    expect(end.receipt.costUsd).toBeUndefined();
    expect(
      model.requests.map((request) => [
        request.index,
        request.turn,
        request.toolChoice,
        request.tools.length,
      ]),
    ).toEqual([
      [0, 0, 'auto', 1],
      [1, 0, 'auto', 1],
    ]);
    expect(model.requests[1]?.toolResults).toEqual([
      { callId: 'call_0_0', name: 'read_file', result: 'contents of a.md' },
      { callId: 'call_0_1', name: 'read_file', result: 'contents of b.md' },
    ]);
    expect(model.unusedSteps()).toEqual([]);
    expect(() => model.assertAllUsed()).not.toThrow();
  });

  it('fails a request it has no step for with unexpected_call, and records it', async () => {
    const model = new ScriptedProvider([{ text: 'one' }]);
    await collect(model.turn(turnRequest()));
    const events = await collect(model.turn(turnRequest({ input: 'again' })));
    const end = terminal(events);
    expect(end.type === 'error' && end.error).toMatchObject({
      name: 'ProviderError',
      code: 'unexpected_call',
      fields: { provider: 'scripted', requestIndex: 1 },
    });
    expect(model.requests.map((request) => request.input)).toEqual(['Say hello.', 'again']);
    expect(() => model.assertAllUsed()).toThrow(expect.objectContaining({ code: 'unexpected_call' }));
  });

  it('reports unused steps', async () => {
    const model = new ScriptedProvider([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    await collect(model.turn(turnRequest()));
    expect(model.unusedSteps()).toEqual([{ text: 'two' }, { text: 'three' }]);
    expect(() => model.assertAllUsed()).toThrow(/Expected every scripted step to be used, got 2 unused of 3/);
  });

  it('lets a step be a function of the request, and turns its throw into a recorded failure', async () => {
    const model = new ScriptedProvider([
      (request) => ({
        text: `you said ${request.input} with ${request.tools.map((tool) => tool.name).join(',')}`,
      }),
      () => {
        throw new Error('expected the system prompt to mention files');
      },
    ]);
    const first = terminal(await collect(model.turn(turnRequest({ input: 'hi', tools: [READ_FILE] }))));
    expect(first).toMatchObject({ type: 'completed', text: 'you said hi with read_file' });
    const second = terminal(await collect(model.turn(turnRequest())));
    expect(second.type === 'error' && second.error.code).toBe('unexpected_call');
    expect(() => model.assertAllUsed()).toThrow(/expected the system prompt to mention files/);
  });

  it('fails with a scripted error code and fields', async () => {
    const model = new ScriptedProvider([{ error: { code: 'rate_limited', fields: { retryAfterMs: 1000 } } }]);
    const end = terminal(await collect(model.turn(turnRequest())));
    expect(end.type === 'error' && end.error).toMatchObject({
      name: 'ProviderError',
      code: 'rate_limited',
      fields: { provider: 'scripted', retryAfterMs: 1000 },
    });
  });

  it('keeps malformed scripted arguments as a parse error', async () => {
    const model = new ScriptedProvider([
      { toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{oops' }] },
      { text: 'ok' },
    ]);
    const events = await collect(
      model.turn(turnRequest({ tools: [READ_FILE] })),
      () => 'error: bad arguments',
    );
    expect(toolCallsOf(events)[0]).toMatchObject({ id: 'c1', arguments: undefined, rawArguments: '{oops' });
    expect(toolCallsOf(events)[0]?.parseError).toBeDefined();
  });

  it('ends the turn after stop() without consuming the next step', async () => {
    const model = new ScriptedProvider([{ toolCalls: [{ name: 'read_file' }] }, { text: 'never' }]);
    const turn = model.turn(turnRequest({ tools: [READ_FILE] }));
    const events = await collect(turn, () => {
      turn.stop();
      return 'ok';
    });
    expect(terminal(events)).toMatchObject({ type: 'completed', stopReason: 'tool_calls' });
    expect(model.unusedSteps()).toEqual([{ text: 'never' }]);
  });

  it('waits for a step delay through the sleep it is given, and a cancelled delay ends the turn', async () => {
    const { sleep, delays } = fakeSleep();
    const model = new ScriptedProvider([{ text: 'late', delayMs: 250 }], { sleep });
    expect(terminal(await collect(model.turn(turnRequest())))).toMatchObject({
      type: 'completed',
      text: 'late',
    });
    expect(delays).toEqual([250]);

    const real = new ScriptedProvider([{ text: 'never', delayMs: 3_600_000 }]);
    const controller = new AbortController();
    const turn = real.turn(turnRequest(), controller.signal);
    const pending = collect(turn);
    controller.abort(new Error('test over'));
    const end = terminal(await pending);
    expect(end.type === 'error' && end.error.code).toBe('cancelled');
  });

  it('times out a step slower than the request timeout', async () => {
    const model = new ScriptedProvider([{ text: 'too late', delayMs: 3_600_000 }]);
    const end = terminal(await collect(model.turn(turnRequest({ timeoutMs: 20 }))));
    expect(end.type === 'error' && end.error).toMatchObject({
      code: 'timeout',
      fields: { provider: 'scripted', timeoutMs: 20 },
    });
  });

  it('times a step by its own timeoutMs when the request sets none, an endless delay too', async () => {
    for (const delayMs of [3_600_000, Number.POSITIVE_INFINITY]) {
      const model = new ScriptedProvider([{ text: 'too late', delayMs }], { timeoutMs: 20 });
      const end = terminal(await collect(model.turn(turnRequest())));
      expect(end.type === 'error' && end.error).toMatchObject({
        code: 'timeout',
        fields: { provider: 'scripted', timeoutMs: 20 },
      });
    }
    // A request's own limit wins over the provider's.
    const model = new ScriptedProvider([{ text: 'too late', delayMs: 3_600_000 }], { timeoutMs: 600_000 });
    const end = terminal(await collect(model.turn(turnRequest({ timeoutMs: 20 }))));
    expect(end.type === 'error' && end.error).toMatchObject({ fields: { timeoutMs: 20 } });
  });

  it('times a step function that never settles', async () => {
    const timed = new ScriptedProvider([() => new Promise<never>(() => {})], { timeoutMs: 20 });
    const end = terminal(await collect(timed.turn(turnRequest())));
    expect(end.type === 'error' && end.error).toMatchObject({ code: 'timeout', fields: { timeoutMs: 20 } });
    timed.assertAllUsed();
  });

  it('a cancellation ends the wait for a step function that never settles', async () => {
    const never = () => new Promise<never>(() => {});
    const model = new ScriptedProvider([never]);
    const controller = new AbortController();
    const pending = collect(model.turn(turnRequest(), controller.signal));
    controller.abort(new Error('test over'));
    const cancelled = terminal(await pending);
    expect(cancelled.type === 'error' && cancelled.error.code).toBe('cancelled');
    model.assertAllUsed();
  });

  it('a delayMs that is no delay is a problem of the script, not an instant answer', async () => {
    for (const delayMs of [-5, Number.NaN, '100' as unknown as number]) {
      const model = new ScriptedProvider([{ text: 'x', delayMs }]);
      const end = terminal(await collect(model.turn(turnRequest())));
      expect(end.type === 'error' && end.error).toMatchObject({ code: 'unexpected_call' });
      expect(() => model.assertAllUsed()).toThrow(/expected `delayMs` to be a non-negative number/);
    }
  });

  it('refuses a timeoutMs that is not a timer delay', () => {
    for (const timeoutMs of [0, 1.5, 2 ** 31]) {
      expect(() => new ScriptedProvider([], { timeoutMs })).toThrow(
        expect.objectContaining({
          code: 'invalid_option',
          fields: { provider: 'scripted', option: 'timeoutMs' },
        }),
      );
    }
  });

  it('accepts more steps after construction', async () => {
    const model = new ScriptedProvider();
    model.push({ text: 'pushed' });
    expect(terminal(await collect(model.turn(turnRequest())))).toMatchObject({ text: 'pushed' });
    model.assertAllUsed();
  });
});
