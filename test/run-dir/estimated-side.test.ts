/**
 * When the server reported one side of a request's usage and troupe estimated the other
 * (`usage.estimatedSide`), the transcripts and the report mark only that side with `~` and say
 * which it was, instead of "the server reported no usage" on both.
 */
import { describe, expect, it } from 'vitest';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { estimateNote, formatTokenCount, sideEstimated } from '../../src/run-dir/format.ts';
import { journalPage, renderHtmlReport } from '../../src/run-dir/html-report.ts';
import { journalTimeline } from '../../src/run-dir/timeline.ts';
import { transcriptHtml } from '../../src/run-dir/transcript-html.ts';
import { transcriptText } from '../../src/run-dir/transcript-text.ts';
import { receipt, steppingClock, TOOL_SPECS } from '../journal/helpers.ts';

function timelineWith(usage: Record<string, unknown>) {
  const sink = new MemoryJournal({ now: steppingClock() });
  const bodies = [
    {
      type: 'Started',
      definition: { name: 'worker', hash: 'h' },
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      contextWindow: 200000,
      maxInputTokens: 100000,
      context: [],
      task: 'Say hi.',
      metadata: {},
      systemPrompt: 'S',
      toolSpecs: TOOL_SPECS,
      format: 3,
    },
    {
      type: 'InferenceSubmitted',
      round: 1,
      step: 1,
      request: 1,
      inputHash: 'x',
      estimatedTokens: 50,
      tools: [],
    },
    {
      type: 'ProviderReceipt',
      round: 1,
      step: 1,
      receipt: { ...receipt(1234, 56), usage: { ...receipt(1234, 56).usage, ...usage } },
      errorCode: 'network',
    },
  ];
  for (const body of bodies) sink.append({ agentId: 'agent-e', ...body } as AuditEventInput);
  const timeline = journalTimeline(sink.events);
  const agent = timeline.agents[0];
  if (agent === undefined) throw new Error('no agent');
  return { timeline, agent };
}

describe('one estimated side', () => {
  it('is the only side marked, and the note names it; with no usage reported both are', () => {
    const { timeline, agent } = timelineWith({ estimated: true, estimatedSide: 'output' });
    const html = transcriptHtml(agent, 'a0', () => undefined, 0, 0);
    expect(html).toContain('1.2k in / ~56 out');
    expect(html).toContain('~ estimated: the server reported no readable output count');
    expect(html).not.toContain('the server reported no usage');
    const text = transcriptText(agent);
    expect(text).toContain('1.2k in / ~56 out');
    expect(text).not.toContain('~1.2k');
    const report = renderHtmlReport(journalPage('journal.jsonl', timeline), timeline);
    expect(report).toContain('1.2k / ~56');
    expect(report).toContain('~ estimated: the server reported no readable output count');
    expect(report).not.toContain('the server reported no usage');

    const none = timelineWith({ estimated: true }).agent;
    const both = transcriptHtml(none, 'a0', () => undefined, 0, 0);
    expect(both).toContain('~1.2k in / ~56 out');
    expect(both).toContain('~ estimated: the server reported no usage');
  });

  it('format helpers: a side is estimated when it is named or when no side is', () => {
    const input = { estimated: true, estimatedSide: 'input' } as const;
    expect([sideEstimated(input, 'input'), sideEstimated(input, 'output')]).toEqual([true, false]);
    expect([sideEstimated({ estimated: true }, 'output'), sideEstimated({}, 'input')]).toEqual([true, false]);
    expect(estimateNote(input)).toBe('estimated: the server reported no readable input count');
    expect(estimateNote({})).toBeUndefined();
    expect(formatTokenCount(1234, sideEstimated(input, 'output'))).toBe('1.2k');
  });
});
