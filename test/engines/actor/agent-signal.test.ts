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
});
