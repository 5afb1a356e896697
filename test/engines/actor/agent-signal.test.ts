import { describe, expect, it } from 'vitest';
import { agentSignal } from '../../../src/engines/actor/agent-signal.ts';
import { formatAssistant } from '../../../src/loop/history-format.ts';

describe('agentSignal (what both backends tell the supervisor)', () => {
  it("carries the model's text without the history prefix", () => {
    const signal = agentSignal('a1', {
      type: 'HistoryAppended',
      agentId: 'a1',
      round: 1,
      text: formatAssistant('Done.'),
      displayedKeys: [],
      kind: 'assistant',
    });
    expect(signal).toEqual({ type: 'text', agentId: 'a1', text: 'Done.' });
  });

  it('maps a call and its result to tool signals, and leaves other history entries out', () => {
    expect(
      agentSignal('a1', {
        type: 'ToolCall',
        agentId: 'a1',
        round: 2,
        callId: 'c',
        name: 'noop',
        modelName: 'noop',
      }),
    ).toEqual({ type: 'tool_call', agentId: 'a1', round: 2, name: 'noop', ok: undefined });
    expect(
      agentSignal('a1', {
        type: 'HistoryAppended',
        agentId: 'a1',
        round: 2,
        text: 'Reminder',
        displayedKeys: [],
        kind: 'reminder',
      }),
    ).toBeUndefined();
  });

  it('starts a round with its first request only, and reports the usage of every request', () => {
    const submitted = (request: number) =>
      agentSignal('a1', {
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
    const receipt = {
      provider: 'p',
      model: 'm',
      requests: 1,
      usage: { inputTokens: 7, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0, estimated: true },
      latencyMs: 5,
      httpStatus: 200,
      retries: 0,
      costUsd: undefined,
    };
    expect(agentSignal('a1', { type: 'ProviderReceipt', agentId: 'a1', round: 3, step: 6, receipt })).toEqual(
      {
        type: 'receipt',
        agentId: 'a1',
        round: 3,
        step: 6,
        inputTokens: 7,
        outputTokens: 2,
        estimated: true,
        costUsd: null,
        latencyMs: 5,
      },
    );
  });
});
