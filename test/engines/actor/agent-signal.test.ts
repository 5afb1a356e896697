import { describe, expect, it } from 'vitest';
import { TOOL_OUTPUT_PREVIEW_CHARS } from '../../../src/constants.ts';
import { agentSignals } from '../../../src/engines/actor/agent-signal.ts';
import { formatAssistant } from '../../../src/loop/history-format.ts';

describe('agentSignals (what both backends tell the supervisor)', () => {
  it("carries the model's text without the history prefix", () => {
    const signal = agentSignals('a1')({
      type: 'HistoryAppended',
      agentId: 'a1',
      round: 1,
      text: formatAssistant('Done.'),
      displayedKeys: [],
      kind: 'assistant',
    });
    expect(signal).toEqual({ type: 'text', agentId: 'a1', text: 'Done.' });
  });

  it('reports a call when it starts, with its arguments masked, and leaves other history entries out', () => {
    const signals = agentSignals('a1');
    expect(
      signals({
        type: 'ToolCall',
        agentId: 'a1',
        round: 2,
        callId: 'c',
        name: 'noop',
        modelName: 'noop',
        args: { path: 'a.md', apiKey: 'sk-live-123456789012345678901234' },
      }),
    ).toEqual({
      type: 'tool_call',
      agentId: 'a1',
      round: 2,
      name: 'noop',
      callId: 'c',
      phase: 'started',
      ok: undefined,
      args: { path: 'a.md', apiKey: '[REDACTED]' },
    });
    expect(
      signals({
        type: 'HistoryAppended',
        agentId: 'a1',
        round: 2,
        text: 'Reminder',
        displayedKeys: [],
        kind: 'reminder',
      }),
    ).toBeUndefined();
  });

  it('reports its completion with ok, a masked and cut preview of the output, the duration and the replay disposition', () => {
    let clock = 1000;
    const signals = agentSignals('a1', () => clock);
    signals({ type: 'ToolCall', agentId: 'a1', round: 1, callId: 'c', name: 'read_file', modelName: 'Read' });
    clock = 1042;
    const secret = 'Bearer abcdefghijklmnopqrstuvwxyz0123456789';
    const long = `${secret} ${'x'.repeat(2 * TOOL_OUTPUT_PREVIEW_CHARS)}`;
    const completed = signals({
      type: 'ToolResult',
      agentId: 'a1',
      round: 1,
      callId: 'c',
      name: 'read_file',
      ok: false,
      projectionAccepted: true,
      text: long,
      stateUpdates: [],
      displayedStateKeys: [],
      replay: 'refused',
    });
    expect(completed).toMatchObject({
      type: 'tool_call',
      phase: 'completed',
      callId: 'c',
      ok: false,
      durationMs: 42,
      replay: 'refused',
    });
    const output = completed?.type === 'tool_call' ? (completed.output ?? '') : '';
    expect(output).toHaveLength(TOOL_OUTPUT_PREVIEW_CHARS);
    expect(output.endsWith('…')).toBe(true);
    expect(output).not.toContain('abcdefghij');
    expect(output).toContain('[REDACTED]');
  });

  it('starts a round with its first request only, and reports the usage of every request', () => {
    const signals = agentSignals('a1');
    const submitted = (request: number) =>
      signals({
        type: 'InferenceSubmitted',
        agentId: 'a1',
        round: 3,
        step: 4 + request,
        request,
        inputHash: 'h',
        estimatedTokens: 10,
        tools: [],
      });
    expect(submitted(1)).toEqual({ type: 'round', agentId: 'a1', round: 3, estimatedTokens: 10 });
    expect(submitted(2)).toBeUndefined();
    const usage = {
      inputTokens: 7,
      outputTokens: 2,
      cachedInputTokens: 1,
      reasoningTokens: 0,
      estimated: true,
    };
    const receipt = {
      provider: 'p',
      model: 'm',
      requests: 1,
      usage,
      latencyMs: 5,
      httpStatus: 200,
      retries: 0,
      costUsd: undefined,
    };
    expect(signals({ type: 'ProviderReceipt', agentId: 'a1', round: 3, step: 6, receipt })).toEqual({
      type: 'receipt',
      agentId: 'a1',
      round: 3,
      step: 6,
      inputTokens: 7,
      outputTokens: 2,
      estimated: true,
      costUsd: null,
      latencyMs: 5,
      usage,
      endedAt: expect.any(Number),
    });
  });

  it('builds no optional signal nobody wants, and still reports waits, instructions and wanted kinds', () => {
    const wanted = new Set<string>(['receipt']);
    const signals = agentSignals(
      'a1',
      () => 0,
      (kind) => wanted.has(kind),
    );
    const call = {
      type: 'ToolCall',
      agentId: 'a1',
      round: 1,
      callId: 'c',
      name: 'noop',
      modelName: 'noop',
      args: {},
    } as const;
    const result = {
      type: 'ToolResult',
      agentId: 'a1',
      round: 1,
      callId: 'c',
      name: 'noop',
      ok: true,
      projectionAccepted: true,
      text: 'out',
      stateUpdates: [],
      displayedStateKeys: [],
    } as const;
    expect(signals(call)).toBeUndefined();
    expect(signals(result)).toBeUndefined();
    expect(
      signals({
        type: 'InferenceSubmitted',
        agentId: 'a1',
        round: 1,
        step: 1,
        request: 1,
        inputHash: 'h',
        estimatedTokens: 1,
        tools: [],
      }),
    ).toBeUndefined();
    expect(
      signals({
        type: 'HistoryAppended',
        agentId: 'a1',
        round: 1,
        text: formatAssistant('Hi.'),
        displayedKeys: [],
        kind: 'assistant',
      }),
    ).toBeUndefined();
    expect(signals({ type: 'Waiting', agentId: 'a1', callId: 'w', index: 0 })).toEqual({
      type: 'waiting',
      agentId: 'a1',
    });
    expect(signals({ type: 'Instructed', agentId: 'a1', callId: 'w', index: 0, text: 'go' })).toEqual({
      type: 'instructed',
      agentId: 'a1',
      text: 'go',
    });
    // A listener added later: the next call is reported again.
    wanted.add('tool_call');
    expect(signals({ ...call, callId: 'd' })).toMatchObject({
      type: 'tool_call',
      phase: 'started',
      callId: 'd',
    });
    expect(signals({ ...result, callId: 'd' })).toMatchObject({
      type: 'tool_call',
      phase: 'completed',
      durationMs: 0,
    });
  });
});
