import { describe, expect, it } from 'vitest';
import { SUPERSEDED_MARKER } from '../../src/constants.ts';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { toolColor } from '../../src/run-dir/html-charts.ts';
import { journalTimeline } from '../../src/run-dir/timeline.ts';
import { buildTranscript, type ToolEntry, transcriptEntries } from '../../src/run-dir/transcript.ts';
import { transcriptHtml } from '../../src/run-dir/transcript-html.ts';
import { transcriptText } from '../../src/run-dir/transcript-text.ts';
import { receipt, steppingClock, TOOL_SPECS } from '../journal/helpers.ts';

const AGENT = 'agent-t';

type Body = AuditEventInput extends infer E ? (E extends unknown ? Omit<E, 'agentId'> : never) : never;

/** A journal written the way the loop writes one, with a clock that ticks a second per event. */
function journal(bodies: readonly Body[]) {
  const sink = new MemoryJournal({ now: steppingClock() });
  for (const body of bodies) sink.append({ agentId: AGENT, ...body } as AuditEventInput);
  return sink.events;
}

const started = {
  type: 'Started',
  definition: { name: 'worker', hash: 'h' },
  provider: 'openai',
  model: 'gpt-4o',
  contextWindow: 128000,
  maxInputTokens: 100000,
  context: ['Context one.'],
  task: 'Read a.md twice.',
  metadata: {},
  systemPrompt: 'You are a worker.',
  toolSpecs: TOOL_SPECS,
  format: 3,
} as const;

const submitted = (round: number, step: number, request: number) =>
  ({
    type: 'InferenceSubmitted',
    round,
    step,
    request,
    inputHash: 'x',
    estimatedTokens: 50,
    tools: ['read_file'],
  }) as const;

describe('buildTranscript', () => {
  const events = journal([
    started,
    submitted(1, 1, 1),
    {
      type: 'ProviderReceipt',
      round: 1,
      step: 1,
      receipt: {
        ...receipt(100, 10),
        retries: 1,
        retryLog: [{ atMs: 40, code: 'rate_limited', status: 429, delayMs: 500 }],
        queuedMs: 20,
      },
      stopReason: 'tool_calls',
    },
    {
      type: 'HistoryAppended',
      round: 1,
      text: 'Assistant: Reading it.',
      displayedKeys: [],
      kind: 'assistant',
    },
    {
      type: 'ToolCall',
      round: 1,
      callId: 'c1',
      name: 'read_file',
      modelName: 'read_file',
      args: { path: 'a.md' },
    },
    {
      type: 'ToolResult',
      round: 1,
      callId: 'c1',
      name: 'read_file',
      ok: true,
      projectionAccepted: true,
      text: 'a.md: v1',
      stateUpdates: [{ key: 'file:a.md', text: 'a.md v1' }],
      displayedStateKeys: ['file:a.md'],
    },
    submitted(2, 2, 1),
    { type: 'ProviderReceipt', round: 2, step: 2, receipt: receipt(120, 12), stopReason: 'tool_calls' },
    {
      type: 'ToolCall',
      round: 2,
      callId: 'c2',
      name: 'read_file',
      modelName: 'read_file',
      args: { path: 'a.md' },
    },
    {
      type: 'ToolResult',
      round: 2,
      callId: 'c2',
      name: 'read_file',
      ok: true,
      projectionAccepted: true,
      text: 'a.md: v2',
      stateUpdates: [{ key: 'file:a.md', text: 'a.md v2' }],
      displayedStateKeys: ['file:a.md'],
    },
    submitted(3, 3, 1),
    { type: 'ProviderReceipt', round: 3, step: 3, receipt: receipt(130, 5), stopReason: 'tool_calls' },
    {
      type: 'ToolCall',
      round: 3,
      callId: 'w1',
      name: 'wait_for_instruction',
      modelName: 'wait_for_instruction',
      args: {},
    },
    { type: 'Waiting', callId: 'w1', index: 0 },
    { type: 'Instructed', callId: 'w1', index: 0, text: 'Go on.' },
    {
      type: 'ToolResult',
      round: 3,
      callId: 'w1',
      name: 'wait_for_instruction',
      ok: true,
      projectionAccepted: true,
      text: 'Instruction: Go on.',
      stateUpdates: [],
      displayedStateKeys: [],
    },
    submitted(3, 4, 2),
    { type: 'ToolCall', round: 3, callId: 'x1', name: 'http_get', modelName: 'http_get', args: { url: 'u' } },
    { type: 'Resumed', nextRound: 4, pendingCallIds: ['x1'], truncatedBytes: 0 },
    {
      type: 'ToolResult',
      round: 3,
      callId: 'x1',
      name: 'http_get',
      ok: false,
      projectionAccepted: true,
      text: 'This tool call was interrupted.',
      stateUpdates: [],
      displayedStateKeys: [],
    },
    {
      type: 'Completed',
      answer: 'done',
      result: { summary: 'done' },
      usage: { inputTokens: 350, outputTokens: 27, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: null,
      rounds: 3,
      steps: 4,
    },
  ]);
  const transcript = buildTranscript(events, { inputs: true });

  it('groups requests, text, tool calls and state changes by round, with each request’s receipt', () => {
    expect(transcript?.rounds.map((round) => round.round)).toEqual([1, 2, 3]);
    expect(transcript?.rounds[0]?.entries.map((entry) => entry.kind)).toEqual([
      'request',
      'text',
      'tool',
      'state',
    ]);
    const request = transcript?.rounds[0]?.entries[0];
    expect(request).toMatchObject({
      kind: 'request',
      step: 1,
      receipt: { queuedMs: 20, retryLog: [{ code: 'rate_limited', status: 429, delayMs: 500 }] },
    });
    expect(transcript?.rounds[0]?.entries[1]).toMatchObject({ kind: 'text', text: 'Reading it.' });
    expect(transcript).toMatchObject({ steps: 4, toolCalls: 4, retries: 1, model: 'gpt-4o' });
  });

  it('counts the history entries a state update supersedes', () => {
    const states = transcriptEntries(transcript ?? ({} as never)).filter((entry) => entry.kind === 'state');
    expect(states.map((state) => state.kind === 'state' && [state.key, state.superseded])).toEqual([
      ['file:a.md', 0],
      ['file:a.md', 1],
    ]);
  });

  it('rebuilds each round’s input: superseded displays as markers, current states after the history', () => {
    const round2 = transcript?.rounds[1]?.input;
    expect(round2?.context).toEqual(['Context one.']);
    expect(round2?.history.map((entry) => entry.text)).toEqual([
      'Assistant: Reading it.',
      'Tool call: read_file {"path":"a.md"}',
      'Tool result (read_file): a.md: v1',
    ]);
    expect(round2?.states).toEqual([]);
    const round3 = transcript?.rounds[2]?.input;
    expect(round3?.history[2]).toEqual({ text: SUPERSEDED_MARKER, superseded: true });
    expect(round3?.history.at(-1)?.text).toBe('Tool result (read_file): a.md: v2');
  });

  it('attaches the wait and its instruction to the wait_for_instruction call', () => {
    const wait = transcriptEntries(transcript ?? ({} as never)).find(
      (entry): entry is ToolEntry => entry.kind === 'tool' && entry.callId === 'w1',
    );
    expect(wait?.wait).toMatchObject({ index: 0, instruction: 'Go on.' });
    expect((wait?.wait?.instructedAt ?? 0) - (wait?.wait?.at ?? 0)).toBe(1000);
  });

  it('marks a call cut off by a restart as interrupted, ending where the thread died', () => {
    const entries = transcriptEntries(transcript ?? ({} as never));
    const cut = entries.find((entry): entry is ToolEntry => entry.kind === 'tool' && entry.callId === 'x1');
    expect(cut).toMatchObject({ interrupted: true, result: { ok: false } });
    expect(cut?.end).toBe(cut?.at);
    expect(entries.some((entry) => entry.kind === 'resumed')).toBe(true);
    const request = entries.filter((entry) => entry.kind === 'request').at(-1);
    expect(request).toMatchObject({ step: 4, end: undefined, receipt: undefined });
  });

  it('is undefined for events that do not start with Started', () => {
    expect(buildTranscript(events.slice(1))).toBeUndefined();
  });

  it('prints in the terminal with the retry, the wait, the restart and the outcome', () => {
    const agent = journalTimeline(events).agents[0];
    const text = transcriptText(agent ?? ({} as never));
    expect(text).toContain('retry: rate_limited (HTTP 429) at +40ms, waited 500ms');
    expect(text).toContain('waited 1.0s for instruction #0: Go on.');
    expect(text).toContain('tool http_get interrupted');
    expect(text).toContain('completed +');
  });

  it('draws queueing, the retry backoff, the wait and the time down on the timeline', () => {
    const agent = journalTimeline(events).agents[0];
    const kinds = new Set(agent?.spans.map((span) => span.kind));
    expect([...kinds].sort()).toEqual(['backoff', 'down', 'model', 'queued', 'tool', 'wait']);
    expect(agent?.markers.map((marker) => marker.kind)).toEqual(['retry', 'restart']);
  });
});

describe('approvals in the transcript', () => {
  const events = journal([
    started,
    submitted(1, 1, 1),
    { type: 'ProviderReceipt', round: 1, step: 1, receipt: receipt(100, 10), stopReason: 'tool_calls' },
    {
      type: 'ToolCall',
      round: 1,
      callId: 'w1',
      name: 'write_file',
      modelName: 'Write',
      args: { path: 'a.md' },
    },
    {
      type: 'ApprovalRequested',
      round: 1,
      callId: 'w1',
      requestId: 'req-1',
      name: 'write_file',
      modelName: 'Write',
      args: { path: 'a.md' },
      argsHash: 'h',
      rule: 'Write',
      reason: 'file edits ask in the default mode',
      deadline: null,
    },
    {
      type: 'ApprovalDecided',
      round: 1,
      callId: 'w1',
      requestId: 'req-1',
      name: 'write_file',
      approved: false,
      by: 'person',
      decider: 'tty',
      reason: 'not that file',
      rule: 'Write',
    },
    {
      type: 'ToolCall',
      round: 1,
      callId: 'b1',
      name: 'run_terminal_cmd',
      modelName: 'Bash',
      args: { command: 'rm -rf /' },
    },
    {
      type: 'ApprovalDecided',
      round: 1,
      callId: 'b1',
      name: 'run_terminal_cmd',
      approved: false,
      by: 'rule',
      rule: 'Bash(rm:*)',
    },
  ]);

  it('attaches each decision to its call: asked of a person with the wait, or decided by a rule', () => {
    const entries = transcriptEntries(buildTranscript(events) ?? ({} as never));
    const tools = entries.filter((entry): entry is ToolEntry => entry.kind === 'tool');
    expect(tools[0]?.approval).toMatchObject({
      requestId: 'req-1',
      approved: false,
      by: 'person',
      decider: 'tty',
      decisionReason: 'not that file',
      rule: 'Write',
    });
    expect(tools[0]?.approval?.decidedAt).toBeGreaterThan(tools[0]?.approval?.requestedAt ?? Infinity);
    expect(tools[1]?.approval).toMatchObject({
      requestedAt: undefined,
      approved: false,
      by: 'rule',
      rule: 'Bash(rm:*)',
    });
    const text = transcriptText(journalTimeline(events).agents[0] ?? ({} as never));
    expect(text).toContain('denied by person (tty) after 1.0s · rule Write · not that file');
    expect(text).toContain('denied by rule · rule Bash(rm:*)');
    const agent = journalTimeline(events).agents[0] ?? ({} as never);
    const html = transcriptHtml(agent, 'a0', () => undefined, 0, 0);
    expect(html).toContain(
      '<p class="e-approval failed">denied by person (tty) after 1.0s · rule Write · not that file</p>',
    );
  });
});

describe('toolColor', () => {
  it('gives a tool the same colour whatever other tools a run used', () => {
    expect(toolColor('read_file')).toBe('#16a34a');
    expect(toolColor('my_tool')).toBe(toolColor('my_tool'));
    expect(toolColor('my_tool')).toMatch(/^hsl\(\d+,62%,42%\)$/);
    expect(toolColor('my_tool')).not.toBe(toolColor('my_other_tool'));
  });
});
