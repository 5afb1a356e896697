/** The simulated model: acts on the tools it is offered, deterministically, without network. */
import { describe, expect, it, vi } from 'vitest';
import { SimulatedProvider } from '../../src/providers/simulated.ts';
import type { TurnEvent, TurnRequest } from '../../src/providers/types.ts';
import type { ToolSpec } from '../../src/tools/types.ts';
import { collect, fakeSleep, terminal, toolCallsOf, turnRequest } from './helpers.ts';

const READ_FILE: ToolSpec = {
  name: 'read_file',
  description: 'Reads a file.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, startLine: { type: 'integer' } },
    required: ['path'],
  },
};
const WAIT: ToolSpec = {
  name: 'wait_for_instruction',
  description: 'Waits for the next instruction.',
  parameters: { type: 'object', properties: { reason: { type: 'string' } } },
};
const COMPLETE: ToolSpec = {
  name: 'complete_task',
  description: 'Delivers the result.',
  parameters: { type: 'object', properties: { result: { type: 'object' } }, required: ['result'] },
};
const GREP: ToolSpec = {
  name: 'grep',
  description: 'Searches.',
  parameters: { type: 'object', properties: { pattern: { type: 'string' } }, required: ['pattern'] },
};

const neverSleep = async () => {
  throw new Error('a zero-latency model must not sleep');
};

function request(input: string, tools: ToolSpec[], overrides: Partial<TurnRequest> = {}): TurnRequest {
  return turnRequest({ model: 'simulated', system: 'You review files.', input, tools, ...overrides });
}

function calls(events: readonly TurnEvent[]) {
  return toolCallsOf(events).map((call) => [call.name, call.arguments]);
}

describe('simulated provider', () => {
  it('reads the files the task names, then completes with a structured result, then stops', async () => {
    const model = new SimulatedProvider({ sleep: neverSleep });
    const turn = model.turn(request('Review `src/a.ts` and docs/b.md, then report.', [READ_FILE, COMPLETE]));
    const events = await collect(turn, (call) =>
      call.name === 'read_file' ? `${String(call.arguments?.path)}: 10 lines` : 'accepted',
    );
    expect(calls(events)).toEqual([
      ['read_file', { path: 'src/a.ts' }],
      ['read_file', { path: 'docs/b.md' }],
      [
        'complete_task',
        {
          result: {
            summary:
              '[simulated] Task: Review `src/a.ts` and docs/b.md, then report.; files: src/a.ts, docs/b.md; 2 tool result(s) seen.',
            files: ['src/a.ts', 'docs/b.md'],
            instructions: [],
            simulated: true,
          },
        },
      ],
    ]);
    const end = terminal(events);
    expect(end).toMatchObject({ type: 'completed', stopReason: 'end_turn' });
    expect(end.type === 'completed' && end.text.startsWith('[simulated]')).toBe(true);
    expect(end.receipt).toMatchObject({ provider: 'simulated', model: 'simulated', requests: 4, costUsd: 0 });
  });

  it('answers with labelled text when it has no tools', async () => {
    const events = await collect(new SimulatedProvider().turn(request('What is 2 + 2?', [])));
    expect(terminal(events)).toMatchObject({
      type: 'completed',
      text: '[simulated] Task: What is 2 + 2?; 0 tool result(s) seen.',
      stopReason: 'end_turn',
    });
  });

  it('names the task it was given, not the context the input opens with', async () => {
    const input =
      'Rubric: states the retry count.\n\nSecond context section.\n\nGrade data/retry.md\nand be brief.';
    const events = await collect(
      new SimulatedProvider().turn(request(input, [], { task: 'Grade data/retry.md\nand be brief.' })),
    );
    // Before, the first line of the input was the "Task": here the rubric, a context section.
    expect(terminal(events)).toMatchObject({
      type: 'completed',
      text: '[simulated] Task: Grade data/retry.md; context: Rubric: states the retry count.; 0 tool result(s) seen.',
    });
    const alone = await collect(
      new SimulatedProvider().turn(request('Grade it.', [], { task: 'Grade it.' })),
    );
    expect(terminal(alone)).toMatchObject({ text: '[simulated] Task: Grade it.; 0 tool result(s) seen.' });
  });

  it('fills a complete_task schema with its required fields', async () => {
    const complete: ToolSpec = {
      ...COMPLETE,
      parameters: {
        type: 'object',
        properties: {
          summary: { type: 'string' },
          verdict: { enum: ['pass', 'fail'] },
          score: { type: 'number', minimum: 3 },
          optional: { type: 'string' },
        },
        required: ['summary', 'verdict', 'score'],
      },
    };
    const events = await collect(
      new SimulatedProvider().turn(request('Judge it.', [complete])),
      () => 'accepted',
    );
    expect(calls(events)).toEqual([
      [
        'complete_task',
        { summary: '[simulated] Task: Judge it.; 0 tool result(s) seen.', verdict: 'pass', score: 3 },
      ],
    ]);
  });

  it('waits for instructions when the task asks, and reports the last one', async () => {
    const model = new SimulatedProvider();
    const task = 'Read notes.txt, then wait for two instructions before you finish.';
    let instruction = 0;
    const events = await collect(model.turn(request(task, [READ_FILE, WAIT, COMPLETE])), (call) => {
      if (call.name === 'wait_for_instruction') return `instruction ${++instruction}`;
      return 'ok';
    });
    expect(toolCallsOf(events).map((call) => call.name)).toEqual([
      'read_file',
      'wait_for_instruction',
      'wait_for_instruction',
      'complete_task',
    ]);
    const result = toolCallsOf(events)[3]?.arguments?.result as { summary: string; instructions: string[] };
    expect(result.instructions).toEqual(['instruction 1', 'instruction 2']);
    expect(result.summary).toContain('last instruction: instruction 2');
  });

  it('waits the configured number of times even when the task does not ask', async () => {
    const events = await collect(
      new SimulatedProvider({ waits: 3 }).turn(request('Help out.', [WAIT, COMPLETE])),
      () => 'go',
    );
    expect(toolCallsOf(events).map((call) => call.name)).toEqual([
      'wait_for_instruction',
      'wait_for_instruction',
      'wait_for_instruction',
      'complete_task',
    ]);
  });

  it('makes exactly `rounds` tool calls before completing, padding with more reads', async () => {
    const events = await collect(
      new SimulatedProvider({ rounds: 5 }).turn(request('Check a.md and b.md.', [READ_FILE, COMPLETE])),
      () => 'ok',
    );
    expect(toolCallsOf(events).map((call) => `${call.name}:${String(call.arguments?.path ?? '')}`)).toEqual([
      'read_file:a.md',
      'read_file:b.md',
      'read_file:a.md',
      'read_file:b.md',
      'read_file:a.md',
      'complete_task:',
    ]);
  });

  it('pads with another offered tool when it cannot read files', async () => {
    const events = await collect(
      new SimulatedProvider({ rounds: 2 }).turn(request('Search.', [GREP, COMPLETE])),
      () => 'ok',
    );
    expect(calls(events)).toEqual([
      ['grep', { pattern: 'simulated' }],
      ['grep', { pattern: 'simulated' }],
      ['complete_task', expect.objectContaining({})],
    ]);
  });

  it('calls a tool that takes no arguments (a closed empty object) with {}', async () => {
    const noop: ToolSpec = {
      name: 'noop',
      description: 'Does nothing.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    };
    const events = await collect(
      new SimulatedProvider({ rounds: 2 }).turn(request('Call noop.', [noop, COMPLETE])),
      () => 'ok',
    );
    expect(calls(events)).toEqual([
      ['noop', {}],
      ['noop', {}],
      ['complete_task', expect.objectContaining({})],
    ]);
  });

  it('picks up where it left off from the tool results rendered in its input', async () => {
    const model = new SimulatedProvider();
    const task = 'Review a.md and b.md.';
    const first = model.turn(request(task, [READ_FILE, COMPLETE]));
    const firstEvents = await collect(first, () => {
      first.stop();
      return 'a says hi';
    });
    expect(calls(firstEvents)).toEqual([['read_file', { path: 'a.md' }]]);
    // The next round's input renders the first call and its result as history.
    const history = `${task}\n\nTool call: read_file a.md\nTool result: a says hi\nmentions c.md`;
    const second = model.turn(request(history, [READ_FILE, COMPLETE]));
    const secondEvents = await collect(second, () => {
      second.stop();
      return 'b says hi';
    });
    expect(calls(secondEvents)).toEqual([['read_file', { path: 'b.md' }]]);
  });

  it('obeys a forced tool choice and a none tool choice', async () => {
    const model = new SimulatedProvider();
    const forced = await collect(
      model.turn(request('Read a.md.', [READ_FILE, COMPLETE], { toolChoice: { tool: 'complete_task' } })),
      () => 'ok',
    );
    expect(toolCallsOf(forced).map((call) => call.name)).toEqual(['complete_task']);
    const none = await collect(
      model.turn(request('Read a.md.', [READ_FILE, COMPLETE], { toolChoice: 'none' })),
    );
    expect(toolCallsOf(none)).toEqual([]);
  });

  it('estimates usage as ceil(chars / 4)', async () => {
    const events = await collect(
      new SimulatedProvider().turn(
        turnRequest({ model: 'simulated', system: 'abc', input: 'defgh', tools: [] }),
      ),
    );
    const usage = events.find((event) => event.type === 'usage');
    const text = terminal(events).type === 'completed' ? (terminal(events) as { text: string }).text : '';
    expect(usage).toEqual({
      type: 'usage',
      usage: {
        inputTokens: 3,
        outputTokens: Math.ceil(text.length / 4),
        cachedInputTokens: 0,
        reasoningTokens: 0,
      },
    });
  });

  it('draws latency and failures from its seed: the same seed gives the same run', async () => {
    const run = async (seed: number) => {
      const { sleep, delays } = fakeSleep();
      const model = new SimulatedProvider({
        seed,
        latency: { meanMs: 100, jitterMs: 50 },
        failureRate: 0.3,
        sleep,
      });
      const outcomes: string[] = [];
      for (let index = 0; index < 20; index += 1) {
        const end = terminal(await collect(model.turn(request(`Task ${index}`, [COMPLETE])), () => 'ok'));
        outcomes.push(end.type === 'error' ? end.error.code : end.type);
      }
      return { delays, outcomes };
    };
    const a = await run(7);
    const b = await run(7);
    const c = await run(8);
    expect(a).toEqual(b);
    expect(a.delays.every((delay) => delay >= 50 && delay <= 150)).toBe(true);
    expect(new Set(a.delays).size).toBeGreaterThan(1);
    expect(a.outcomes).toContain('server_error');
    expect(a.outcomes).toContain('completed');
    expect(c).not.toEqual(a);
  });

  it('fails every request at failure rate 1 and sleeps the fixed latency', async () => {
    const { sleep, delays } = fakeSleep();
    const end = terminal(
      await collect(new SimulatedProvider({ failureRate: 1, latency: 40, sleep }).turn(request('x', []))),
    );
    expect(end.type === 'error' && end.error).toMatchObject({
      code: 'server_error',
      fields: { provider: 'simulated', simulated: true },
    });
    expect(delays).toEqual([40]);
  });

  it('fails a request whose latency outlasts its time limit with a typed timeout (default 600000 ms)', async () => {
    const reasons: unknown[] = [];
    // Waits until its signal aborts, however long the latency: only the time limit can end it.
    const sleep = (_ms: number, signal: AbortSignal) =>
      new Promise<void>((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          reasons.push(signal.reason);
          reject(signal.reason);
        });
      });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      // No TurnRequest.timeoutMs, as the agent loop sends it: before, nothing timed the latency.
      const model = new SimulatedProvider({ latency: 600_000_000, sleep });
      const events = collect(model.turn(request('x', [COMPLETE])));
      await vi.advanceTimersByTimeAsync(600_000);
      expect(reasons).toHaveLength(1);
      const end = terminal(await events);
      expect(end.type === 'error' && end.error).toMatchObject({
        code: 'timeout',
        fields: { provider: 'simulated', timeoutMs: 600_000 },
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it("times a request by its timeoutMs option, and by the request's own over it", async () => {
    const { sleep } = fakeSleep();
    const slow = (ms: number, signal: AbortSignal) =>
      ms > 0
        ? new Promise<void>((_resolve, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason)),
          )
        : sleep(ms, signal);
    const own = terminal(
      await collect(
        new SimulatedProvider({ latency: 600_000, timeoutMs: 20, sleep: slow }).turn(request('x', [])),
      ),
    );
    expect(own.type === 'error' && own.error).toMatchObject({ code: 'timeout', fields: { timeoutMs: 20 } });
    const asked = terminal(
      await collect(
        new SimulatedProvider({ latency: 600_000, timeoutMs: 600_000, sleep: slow }).turn(
          request('x', [], { timeoutMs: 10 }),
        ),
      ),
    );
    expect(asked.type === 'error' && asked.error).toMatchObject({
      code: 'timeout',
      fields: { timeoutMs: 10 },
    });
  });

  it('a latency past the longest timer delay runs into the request limit instead of answering at once', async () => {
    const end = terminal(
      await collect(new SimulatedProvider({ latency: 2 ** 32, timeoutMs: 20 }).turn(request('x', []))),
    );
    expect(end.type === 'error' && end.error).toMatchObject({ code: 'timeout', fields: { timeoutMs: 20 } });
  });

  it('rejects invalid options', () => {
    expect(() => new SimulatedProvider({ timeoutMs: 0 })).toThrow(
      /Expected `timeoutMs` to be an integer between 1 and 2147483647/,
    );
    expect(() => new SimulatedProvider({ failureRate: 2 })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
    expect(() => new SimulatedProvider({ latency: { meanMs: -1, jitterMs: 0 } })).toThrow(/meanMs/);
    expect(() => new SimulatedProvider({ rounds: 1.5 })).toThrow(/Expected `rounds` to be an integer >= 0/);
  });
});
