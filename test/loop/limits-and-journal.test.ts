import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { JOURNAL_FORMAT } from '../../src/loop/projection-events.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { budget, stepCount, toolCalled } from '../../src/loop/stop-conditions.ts';
import { ScriptedProvider } from '../../src/providers/scripted.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import type { Tool } from '../../src/tools/types.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, recordingTool, runScripted, tempDir } from './helpers.ts';

const loopStep = { toolCalls: [{ name: 'echo', arguments: { value: 'again' } }] };
const echo = () => recordingTool('echo', () => ({ ok: true, text: 'echoed' }));

describe('agent loop: limits', () => {
  it('maxSteps from the definition counts model requests, inside a round too', async () => {
    const { outcome, provider } = await runScripted([loopStep, loopStep, loopStep], {
      tools: [echo().tool],
      definition: { maxSteps: 2 },
      allowUnused: true,
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'step_limit', rounds: 1, steps: 2 });
    expect(provider.requests).toHaveLength(2);
  });

  it('the hard cap of 250 steps applies whatever the definition says', () => {
    expect(
      stepCount(250)({
        stepsUsed: 250,
        roundsUsed: 1,
        totalTokens: 0,
        costUsd: 0,
        elapsedMs: 0,
        succeededTools: new Set(),
      }),
    ).toMatchObject({
      reason: 'step_limit',
    });
  });

  it('a token budget spent inside a round fails the agent before the next request', async () => {
    const { outcome, provider } = await runScripted(
      [{ ...loopStep, usage: { inputTokens: 600, outputTokens: 500 } }],
      { tools: [echo().tool], run: { limits: { maxTotalTokens: 1000 } } },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'token_budget' } });
    expect(outcome.usage).toEqual({
      inputTokens: 600,
      outputTokens: 500,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    expect(provider.requests).toHaveLength(1);
  });

  it('usage a provider module reports as negative or endless is estimated instead, so budgets still hold', async () => {
    for (const usage of [
      { inputTokens: -1e15, outputTokens: -5 },
      { inputTokens: 1e308, outputTokens: 1 },
      { inputTokens: 0.5, outputTokens: 1 },
    ]) {
      const { outcome, provider } = await runScripted([{ ...loopStep, usage }], {
        tools: [echo().tool],
        run: { limits: { maxTotalTokens: 100 } },
      });
      // The request is estimated (a few hundred tokens of prompt and tools): the budget ends the
      // agent before its next request, where -1e15 would have left it far below its budget.
      expect(outcome, JSON.stringify(usage)).toMatchObject({
        status: 'failed',
        reason: 'budget',
        error: { code: 'token_budget' },
      });
      expect(outcome.usage.estimated).toBe(true);
      expect(outcome.usage.inputTokens).toBeGreaterThan(100);
      expect(Number.isSafeInteger(outcome.usage.inputTokens)).toBe(true);
      expect(provider.requests).toHaveLength(1);
    }
  });

  it('a context that no longer fits the input budget fails before the provider is called', async () => {
    const { outcome, provider } = await runScripted([], {
      run: { task: 'y'.repeat(60_000), maxInputTokens: 8_000 },
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'context_budget' } });
    expect(provider.requests).toHaveLength(0);
  });

  it('tool definitions that alone exceed the input budget fail with context_budget, naming the largest', async () => {
    // An MCP server listing a multi-megabyte schema: the budget left for the task and history was
    // negative, and the agent failed with invalid_option "`maxInputTokens` ... got -1448099".
    const properties = Object.fromEntries(
      Array.from({ length: 2_000 }, (_, i) => [`p${i}`, { type: 'string', description: 'd'.repeat(40) }]),
    );
    const big = recordingTool('mcp__big__schema', () => ({ ok: true, text: 'never' }));
    const tool = { ...big.tool, parameters: { type: 'object', properties } } as Tool;
    const { outcome, provider } = await runScripted([], { tools: [tool], run: { maxInputTokens: 8_000 } });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'context_budget' } });
    expect(outcome.status === 'failed' && outcome.error.message).toMatch(
      /tool definitions leave no room .* the largest tool definition is `mcp__big__schema`/,
    );
    expect(provider.requests).toHaveLength(0);
  });

  it('a wall-clock budget fails with reason timeout', () => {
    expect(
      budget({ wallClockMs: 10 })({
        stepsUsed: 1,
        roundsUsed: 1,
        totalTokens: 0,
        costUsd: 0,
        elapsedMs: 11,
        succeededTools: new Set(),
      }),
    ).toMatchObject({
      reason: 'timeout',
    });
  });

  it('a toolCalled stop condition completes the agent once the tool has succeeded', async () => {
    const { outcome, provider } = await runScripted([loopStep], {
      tools: [echo().tool],
      run: { stopWhen: [toolCalled('echo')] },
    });
    // Checked before the continuation request: the tool's answer is never sent back.
    expect(provider.requests).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo succeeded' });
  });

  it('a provider error ends the agent with provider_error, journalled as the one terminal event', async () => {
    const { outcome, events } = await runScripted([
      { error: { code: 'server_error', message: 'upstream died' } },
    ]);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      error: { code: 'server_error' },
    });
    expect(events.filter((e) => e.type === 'Failed')).toHaveLength(1);
  });

  it("a step slower than the model's request limit fails its agent with a journalled `timeout`", async () => {
    for (const delayMs of [3_600_000, Number.POSITIVE_INFINITY]) {
      const { outcome, events } = await runScripted([{ delayMs, text: 'too late' }], {
        provider: { timeoutMs: 30 },
      });
      expect(outcome).toMatchObject({
        status: 'failed',
        reason: 'provider_error',
        error: { code: 'timeout', fields: { provider: 'scripted', timeoutMs: 30 } },
      });
      expect(eventsOf(events, 'Failed')).toMatchObject([
        { reason: 'provider_error', error: { code: 'timeout', fields: { timeoutMs: 30 } } },
      ]);
    }
  });

  it('aborting the signal cancels the agent', async () => {
    const controller = new AbortController();
    const { outcome } = await runScripted(
      [
        () => {
          controller.abort(new Error('user pressed stop'));
          return { delayMs: 10_000, text: 'never' };
        },
      ],
      { run: { signal: controller.signal } },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
  });
});

describe('agent loop: journal', () => {
  it('every model request records the SHA-256 of its exact input and the journal verifies', async () => {
    const { events } = await runScripted(
      [
        { toolCalls: [{ name: 'echo', arguments: { value: 'a' } }] },
        { text: '' },
        { toolCalls: [{ name: 'complete_task', arguments: { result: { ok: 1 } } }] },
      ],
      { tools: [echo().tool] },
    );
    expect(
      eventsOf(events, 'InferenceSubmitted').map(({ round, step, request }) => ({ round, step, request })),
    ).toEqual([
      { round: 1, step: 1, request: 1 },
      { round: 1, step: 2, request: 2 },
      { round: 2, step: 3, request: 1 },
    ]);
    expect(eventsOf(events, 'ProviderReceipt').map((event) => event.step)).toEqual([1, 2, 3]);
    const result = verifyJournal(events, { rerender: journalRerender() });
    expect(result).toMatchObject({ ok: true, checkedInferences: 3 });
  });

  it("a tool's data the journal cannot hold fails that call, naming the tool, not the agent", async () => {
    // A bigint (or a cycle) in a tool module's data failed the agent with journal_unserializable.
    const odd = recordingTool('odd', () => ({ ok: true, text: 'fine', data: { count: 10n } }));
    const { outcome, events } = await runScripted(
      [{ toolCalls: [{ name: 'odd', arguments: {} }] }, { text: 'done' }],
      { tools: [odd.tool] },
    );
    expect(outcome).toMatchObject({ status: 'completed', answer: 'done' });
    expect(eventsOf(events, 'ToolResult')).toMatchObject([
      {
        name: 'odd',
        ok: false,
        text: expect.stringMatching(/^odd failed: its result cannot be journalled: .*bigint/),
      },
    ]);
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({ ok: true });
  });

  it('verify reports the first altered event', async () => {
    const { events } = await runScripted(
      [{ toolCalls: [{ name: 'echo', arguments: {} }] }, { text: 'done' }],
      {
        tools: [echo().tool],
      },
    );
    // The result's history entry is derived from the ToolResult event, so forging its text changes
    // the next round's input.
    const tampered = events.map((e) => (e.type === 'ToolResult' ? { ...e, text: 'forged' } : e));
    const result = verifyJournal(tampered, { rerender: journalRerender() });
    const forged = tampered.find((e) => e.type === 'ToolResult');
    expect(result.ok).toBe(false);
    expect(result.firstBad?.seq).toBe(forged?.seq);
  });

  it('resuming from a journal cut mid-round continues without re-running finished tool calls', async () => {
    const cwd = tempDir();
    const tool = echo();
    const first = new MemoryJournal();
    const provider = new ScriptedProvider([
      { toolCalls: [{ name: 'echo', arguments: { value: '1' } }] },
      { toolCalls: [{ name: 'echo', arguments: { value: '2' } }] },
      { text: '' },
    ]);
    const base = {
      agentId: 'agent-r',
      definition: makeDefinition(),
      task: 'Echo twice.',
      model: 'test-model',
      registry: createToolRegistry([tool.tool]),
      cwd,
      systemPrompt: 'SYSTEM',
    };
    await runAgent({ ...base, provider, journal: first, stopWhen: [], limits: { maxSteps: 2 } });
    // Keep everything up to the second tool result, as if the process died there.
    const cut = first.events.findIndex((e) => e.type === 'ToolResult' && e.callId.endsWith('1_0'));
    const survived = first.events.slice(0, cut + 1);
    expect(tool.calls).toHaveLength(2);

    const resumed = new MemoryJournal({ events: survived });
    const second = new ScriptedProvider([
      (request) => {
        expect(request.input).toContain('Tool result (echo): echoed');
        return { toolCalls: [{ name: 'complete_task', arguments: { result: { echoed: 2 } } }] };
      },
    ]);
    // The recorded limits apply on resume (2 steps, both used) unless the caller gives others.
    const outcome = await runAgent({
      ...base,
      provider: second,
      journal: resumed,
      resumeFrom: survived,
      limits: { maxSteps: 3 },
    });
    second.assertAllUsed();
    expect(outcome).toMatchObject({ status: 'completed', result: { echoed: 2 } });
    expect(tool.calls).toHaveLength(2);
    expect(resumed.events.some((e) => e.type === 'Resumed')).toBe(true);
    expect(verifyJournal(resumed.events, { rerender: journalRerender() }).ok).toBe(true);
  });

  it('each tool call and result is journalled once; replay derives their history entries', async () => {
    const tool = recordingTool('probe', () => ({
      ok: true,
      text: 'probed',
      stateUpdates: [{ key: 'probe:a', text: 'state a' }],
      displayedStateKeys: ['probe:a'],
    }));
    const { events } = await runScripted(
      [
        // Arguments out of canonical key order: the entry must read the same when replayed.
        { toolCalls: [{ name: 'probe', arguments: { zeta: 1, alpha: { y: 2, x: 1 } } }] },
        { toolCalls: [{ name: 'probe', arguments: { zeta: 2 } }] },
        { toolCalls: [{ name: 'complete_task', arguments: { result: { ok: 1 } } }] },
      ],
      { tools: [tool.tool] },
    );
    expect(events[0]).toMatchObject({ type: 'Started', format: JOURNAL_FORMAT });
    const kinds = eventsOf(events, 'HistoryAppended').map((event) => event.kind);
    expect(kinds).not.toContain('tool_call');
    expect(kinds).not.toContain('tool_result');
    expect(eventsOf(events, 'StateChanged')).toHaveLength(0);
    // Every round's input re-renders from the journal to the hash the loop recorded.
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 3,
    });
  });

  it('resume refuses a journal of format 1, whose replay would build another projection', async () => {
    const { events } = await runScripted([{ toolCalls: [{ name: 'echo', arguments: {} }] }], {
      tools: [echo().tool],
      run: { limits: { maxSteps: 1 } },
    });
    const cut = events.findIndex((e) => e.type === 'ToolResult');
    const legacy = events.slice(0, cut + 1).map((event) => {
      if (event.type !== 'Started') return event;
      const { format: _format, ...rest } = event;
      return rest;
    });
    const outcome = await runAgent({
      agentId: events[0]?.agentId ?? '',
      definition: makeDefinition(),
      task: 'x',
      model: 'm',
      provider: new ScriptedProvider([]),
      cwd: tempDir(),
      resumeFrom: legacy,
    });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'journal_format' } });
  });

  it('resuming a journal that already ended returns its outcome without running anything', async () => {
    const { events } = await runScripted([{ text: 'finished' }]);
    const provider = new ScriptedProvider([]);
    const outcome = await runAgent({
      agentId: 'agent-1',
      definition: makeDefinition(),
      task: 'x',
      model: 'm',
      provider,
      cwd: tempDir(),
      resumeFrom: events,
    });
    expect(outcome).toMatchObject({ status: 'completed', answer: 'finished' });
    expect(provider.requests).toHaveLength(0);
  });
});

describe('agent loop: cancellation of a stuck tool', () => {
  it('a tool that ignores the abort signal does not hold a cancelled agent', async () => {
    const controller = new AbortController();
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const stuck = recordingTool('stuck', () => {
      started();
      return new Promise<never>(() => {});
    });
    const result = runScripted([{ toolCalls: [{ name: 'stuck', arguments: {} }] }], {
      tools: [stuck.tool],
      run: { signal: controller.signal },
    });
    await running;
    controller.abort(new Error('stop'));
    const { outcome, events } = await result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(events.find((e) => e.type === 'ToolResult')).toMatchObject({
      ok: false,
      text: 'stuck was cancelled',
    });
  });
});
