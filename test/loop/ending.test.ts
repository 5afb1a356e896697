import { describe, expect, it } from 'vitest';
import { REMOVED_MARKER, SLICE_REFUSAL, SUPERSEDED_MARKER } from '../../src/constants.ts';
import { eventsOf, recordingTool, runScripted } from './helpers.ts';

const requirement = {
  tool: 'complete_task',
  reminder: 'REMINDER: call complete_task with your result.',
  recovery: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 },
};

describe('agent loop: ending rules', () => {
  it('a non-empty answer without a completion requirement completes the agent', async () => {
    const { outcome, events } = await runScripted([{ text: 'All done.' }]);
    expect(outcome).toMatchObject({ status: 'completed', answer: 'All done.', rounds: 1 });
    expect(events.at(-1)?.type).toBe('Completed');
    expect(events.filter((e) => e.type === 'Completed' || e.type === 'Failed')).toHaveLength(1);
  });

  it('an empty answer with no tool use fails with a model-behaviour reason', async () => {
    const { outcome } = await runScripted([{ text: '' }]);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'model_behavior',
      error: { code: 'empty_answer' },
    });
  });

  it('a stop reason of tool_calls with no tool call is an empty answer, not another paid round', async () => {
    const { outcome, provider } = await runScripted(
      [
        { text: '', stopReason: 'tool_calls' },
        { text: '', stopReason: 'tool_calls' },
        { text: 'never asked for' },
      ],
      { allowUnused: true },
    );
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'empty_answer' } });
    expect(provider.requests).toHaveLength(1);
  });

  it('a stop reason of tool_calls with no tool call counts as a miss of the required tool', async () => {
    const { outcome, provider } = await runScripted(
      Array.from({ length: 6 }, () => ({ text: 'thinking', stopReason: 'tool_calls' as const })),
      { definition: { completionRequirement: requirement }, allowUnused: true },
    );
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'completion_required' } });
    expect(provider.requests).toHaveLength(3);
  });

  it('an empty answer after tool use starts the next round on a fresh render', async () => {
    const echo = recordingTool('echo', () => ({ ok: true, text: 'echoed' }));
    const { outcome, provider } = await runScripted(
      [{ toolCalls: [{ name: 'echo', arguments: { value: 'x' } }] }, { text: '' }, { text: 'final' }],
      { tools: [echo.tool] },
    );
    expect(outcome).toMatchObject({ status: 'completed', answer: 'final', rounds: 2 });
    const second = provider.requests[2];
    expect(second?.turn).toBe(1);
    expect(second?.input).toContain('Tool result (echo): echoed');
  });

  it('complete_task ends the agent with its result and refuses a second call', async () => {
    const { outcome, events } = await runScripted([
      {
        toolCalls: [
          { name: 'complete_task', arguments: { result: { answer: 42 } } },
          { name: 'complete_task', arguments: { result: { answer: 43 } } },
        ],
      },
    ]);
    expect(outcome).toMatchObject({ status: 'completed', result: { answer: 42 } });
    const results = eventsOf(events, 'ToolResult');
    expect(results.map((r) => r.ok)).toEqual([true, false]);
    expect(results[1]?.text).toMatch(/already complete/);
  });

  it('complete_task arguments are validated against outputSchema and the model is told what is wrong', async () => {
    const outputSchema = {
      type: 'object',
      properties: { score: { type: 'number' } },
      required: ['score'],
      additionalProperties: false,
    };
    const { outcome, events, provider } = await runScripted(
      [
        { toolCalls: [{ name: 'complete_task', arguments: { result: { score: 'high' } } }] },
        { toolCalls: [{ name: 'complete_task', arguments: { result: { score: 0.9 } } }] },
      ],
      { definition: { outputSchema } },
    );
    expect(outcome).toMatchObject({ status: 'completed', result: { score: 0.9 } });
    const first = eventsOf(events, 'ToolResult')[0];
    expect(first?.ok).toBe(false);
    expect(first?.text).toMatch(/score/);
    expect(provider.requests[1]?.toolResults[0]?.result).toMatch(/score/);
  });

  it('with a completion requirement, a turn without the tool gets the reminder and is re-sampled', async () => {
    const { outcome } = await runScripted(
      [
        { text: 'I think I am done.' },
        (request) => {
          expect(request.input).toContain(requirement.reminder);
          expect(request.toolChoice).toBeUndefined();
          return { toolCalls: [{ name: 'complete_task', arguments: { result: { ok: true } } }] };
        },
      ],
      { definition: { completionRequirement: requirement } },
    );
    expect(outcome).toMatchObject({ status: 'completed', result: { ok: true } });
  });

  it('the last recovery try forces the tool choice, and running out fails the agent', async () => {
    const { outcome, provider } = await runScripted(
      [{ text: 'no' }, { text: 'still no' }, { text: 'never' }],
      { definition: { completionRequirement: requirement } },
    );
    expect(provider.requests.map((r) => r.toolChoice)).toEqual([
      undefined,
      undefined,
      { tool: 'complete_task' },
    ]);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'model_behavior',
      error: { code: 'completion_required' },
    });
  });

  it('a required tool other than complete_task lets the agent finish once it has succeeded', async () => {
    const submit = recordingTool('submit', () => ({ ok: true, text: 'submitted' }));
    const { outcome } = await runScripted(
      [{ toolCalls: [{ name: 'submit', arguments: {} }] }, { text: 'Submitted, done.' }],
      { tools: [submit.tool], definition: { completionRequirement: { ...requirement, tool: 'submit' } } },
    );
    expect(outcome).toMatchObject({ status: 'completed', answer: 'Submitted, done.' });
    expect(submit.calls).toHaveLength(1);
  });
});

describe('agent loop: tools, slices and captures', () => {
  it('a tool that throws becomes a failed outcome, never a crash', async () => {
    const boom = recordingTool('boom', () => {
      throw new Error('disk on fire');
    });
    const { outcome, events } = await runScripted(
      [{ toolCalls: [{ name: 'boom', arguments: {} }] }, { text: 'Recovered.' }],
      { tools: [boom.tool] },
    );
    expect(outcome.status).toBe('completed');
    const result = eventsOf(events, 'ToolResult')[0];
    expect(result).toMatchObject({ ok: false });
    expect(result?.text).toBe('boom failed: disk on fire');
  });

  it('after a state update the slice ends: later calls in the turn are refused and never run', async () => {
    const setState = recordingTool('set_state', (args) => ({
      ok: true,
      text: `PLAN: ${String(args.value)}`,
      stateUpdates: [{ key: 'plan', text: `PLAN: ${String(args.value)}` }],
      displayedStateKeys: ['plan'],
    }));
    const other = recordingTool('other', () => ({ ok: true, text: 'other ran' }));
    const { outcome, events, provider } = await runScripted(
      [
        {
          toolCalls: [
            { name: 'set_state', arguments: { value: 'a' } },
            { name: 'other', arguments: {} },
          ],
        },
        { toolCalls: [{ name: 'set_state', arguments: { value: 'b' } }] },
        { text: 'done' },
      ],
      { tools: [setState.tool, other.tool] },
    );
    expect(outcome.status).toBe('completed');
    expect(other.calls).toHaveLength(0);
    const refused = eventsOf(events, 'ToolResult').find((r) => r.name === 'other');
    expect(refused).toMatchObject({ ok: false, refused: true, text: SLICE_REFUSAL });
    // Each slice ended with stop(): three turns, each a fresh render.
    expect(provider.requests.map((r) => r.turn)).toEqual([0, 1, 2]);
    const last = provider.requests[2]?.input ?? '';
    expect(last).toContain(SUPERSEDED_MARKER);
    expect(last.match(/PLAN: /g)).toHaveLength(1);
    expect(last).toContain('PLAN: b');
    expect(last).not.toContain('PLAN: a');
    expect(last).not.toContain(REMOVED_MARKER);
  });

  it('a capture runs the next turn without tools and hands its text to the tool', async () => {
    const captured: string[] = [];
    const draft = recordingTool('draft', () => ({
      ok: true,
      text: 'Write the draft now.',
      capture: {
        prompt: 'Write the draft.',
        onCapture: (text: string) => {
          captured.push(text);
          return { ok: true, text: `draft saved (${text.length} chars)` };
        },
      },
    }));
    const { outcome, provider, events } = await runScripted(
      [
        {
          toolCalls: [
            { name: 'draft', arguments: {} },
            { name: 'draft', arguments: {} },
          ],
        },
        (request) => {
          expect(request.tools).toEqual([]);
          expect(request.toolChoice).toBe('none');
          return { text: 'The long draft text.' };
        },
        { text: 'finished' },
      ],
      { tools: [draft.tool] },
    );
    expect(outcome.status).toBe('completed');
    expect(captured).toEqual(['The long draft text.']);
    expect(draft.calls).toHaveLength(1);
    expect(eventsOf(events, 'ToolResult').find((r) => r.refused)?.text).toMatch(/freeform answer/);
    expect(provider.requests[2]?.input).toContain('draft saved (20 chars)');
  });

  it('a tool call during a capture turn is refused', async () => {
    const draft = recordingTool('draft', () => ({
      ok: true,
      text: 'capture please',
      capture: { prompt: 'p', onCapture: () => ({ ok: true, text: 'ok' }) },
    }));
    const { events } = await runScripted(
      [
        { toolCalls: [{ name: 'draft', arguments: {} }] },
        { toolCalls: [{ name: 'draft', arguments: {} }] },
        { text: 'text after refusal' },
        { text: 'done' },
      ],
      { tools: [draft.tool], allowUnused: true },
    );
    expect(eventsOf(events, 'ToolResult').some((r) => r.refused && /during a capture/.test(r.text))).toBe(
      true,
    );
    expect(draft.calls).toHaveLength(1);
  });

  it('a call to a tool that is not admitted never executes', async () => {
    const write = recordingTool('write_thing', () => ({ ok: true, text: 'wrote' }), false);
    const { events } = await runScripted(
      [{ toolCalls: [{ name: 'write_thing', arguments: {} }] }, { text: 'ok' }],
      { tools: [write.tool], definition: { permissionMode: 'plan' } },
    );
    expect(write.calls).toHaveLength(0);
    expect(eventsOf(events, 'ToolResult')[0]?.text).toMatch(/not available/);
  });

  it('malformed JSON arguments are answered with a failure naming the problem', async () => {
    const echo = recordingTool('echo', () => ({ ok: true, text: 'x' }));
    const { events } = await runScripted(
      [{ toolCalls: [{ name: 'echo', arguments: '{"value": ' }] }, { text: 'ok' }],
      { tools: [echo.tool] },
    );
    expect(echo.calls).toHaveLength(0);
    expect(eventsOf(events, 'ToolCall')[0]?.rawArgs).toBe('{"value": ');
    expect(eventsOf(events, 'ToolResult')[0]?.text).toMatch(/not valid JSON/);
  });

  it('a result too large for the budget is not shown, but the exact result is journalled', async () => {
    const big = 'x'.repeat(40_000);
    const huge = recordingTool('huge', () => ({ ok: true, text: big }));
    const { events, provider } = await runScripted(
      [{ toolCalls: [{ name: 'huge', arguments: {} }] }, { text: 'ok' }],
      { tools: [huge.tool], run: { maxInputTokens: 12_000 } },
    );
    const result = eventsOf(events, 'ToolResult')[0];
    expect(result).toMatchObject({ ok: true, projectionAccepted: false });
    expect(result?.text).toBe(big);
    expect(provider.requests[1]?.toolResults[0]).toBeDefined();
    expect(JSON.stringify(provider.requests[1]?.toolResults)).toMatch(/too large to fit/);
  });
});
