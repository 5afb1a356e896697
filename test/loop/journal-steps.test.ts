/**
 * The journal of steps: `troupe verify` checks every model request of a multi-request round, an
 * edited tool result in the middle of a round is caught at the next request, format 2 journals
 * still resume, and an unknown price is an unknown cost.
 */
import { describe, expect, it } from 'vitest';
import type { AuditEvent, AuditEventInput } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { ScriptedProvider } from '../../src/providers/scripted.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, recordingTool, runScripted, tempDir } from './helpers.ts';

/** Re-chains bodies as a forger could: every hash consistent, content changed. */
function rechain(events: readonly AuditEvent[], change: (event: AuditEvent) => AuditEvent): AuditEvent[] {
  const journal = new MemoryJournal();
  for (const event of events) {
    const { seq: _seq, prev: _prev, hash: _hash, ...body } = change(event);
    journal.append(body as AuditEventInput);
  }
  return [...journal.events];
}

const echo = () => recordingTool('echo', (args) => ({ ok: true, text: `echo ${String(args.value)}` }));

async function threeRequestRound() {
  return runScripted(
    [
      { text: 'First I echo.', toolCalls: [{ name: 'echo', arguments: { value: 'a' } }] },
      { toolCalls: [{ name: 'echo', arguments: { value: 'b' } }] },
      { text: 'done' },
    ],
    { tools: [echo().tool] },
  );
}

describe('verify: every request of a round', () => {
  it('checks each of the three requests of one round against its own hash', async () => {
    const { events } = await threeRequestRound();
    const submitted = eventsOf(events, 'InferenceSubmitted');
    expect(submitted.map((event) => [event.round, event.request])).toEqual([
      [1, 1],
      [1, 2],
      [1, 3],
    ]);
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 3,
    });
  });

  it('catches a tool result edited in the middle of a round at the next request, even re-chained', async () => {
    const { events } = await threeRequestRound();
    const first = eventsOf(events, 'ToolResult')[0];
    const forged = rechain(events, (event) =>
      event.type === 'ToolResult' && event.callId === first?.callId
        ? { ...event, text: 'echo forged' }
        : event,
    );
    const result = verifyJournal(forged, { rerender: journalRerender() });
    const secondRequest = eventsOf(forged, 'InferenceSubmitted')[1];
    expect(result).toMatchObject({
      ok: false,
      firstBad: { seq: secondRequest?.seq, reason: 'input_mismatch' },
    });
    expect(result.firstBad?.message).toContain('Round 1, request 2');
  });

  it('catches the model’s own text edited in the middle of a round', async () => {
    const { events } = await threeRequestRound();
    const forged = rechain(events, (event) =>
      event.type === 'HistoryAppended' && event.kind === 'assistant'
        ? { ...event, text: 'Assistant: other' }
        : event,
    );
    expect(verifyJournal(forged, { rerender: journalRerender() })).toMatchObject({
      ok: false,
      firstBad: { reason: 'input_mismatch' },
    });
  });
});

describe('format 2 journals', () => {
  it('resume: each round’s receipt counts its requests as steps, and the resumed journal verifies', async () => {
    const tool = echo();
    const first = await runScripted(
      [
        { toolCalls: [{ name: 'echo', arguments: { value: 'a' } }] },
        { toolCalls: [{ name: 'echo', arguments: { value: 'b' } }] },
      ],
      { tools: [tool.tool], run: { limits: { maxSteps: 2 } } },
    );
    // What troupe 0.2 wrote: one InferenceSubmitted and one receipt per round, no step numbers.
    const roundReceipt = eventsOf(first.events, 'ProviderReceipt')[1];
    const legacy = rechain(
      first.events.filter((event) => {
        if (event.type === 'Failed') return false;
        if (event.type === 'InferenceSubmitted') return event.request === 1;
        return event.type !== 'ProviderReceipt' || event === roundReceipt;
      }),
      (event) => {
        if (event.type === 'Started') return { ...event, format: 2 };
        if (event.type === 'InferenceSubmitted' || event.type === 'ProviderReceipt') {
          const {
            step: _step,
            request: _request,
            ...rest
          } = event as AuditEvent & { step?: number; request?: number };
          return event.type === 'ProviderReceipt'
            ? ({ ...rest, receipt: { ...event.receipt, requests: 2 } } as AuditEvent)
            : (rest as AuditEvent);
        }
        return event;
      },
    );
    expect(verifyJournal(legacy, { rerender: journalRerender() }).ok).toBe(true);

    const journal = new MemoryJournal({ events: legacy });
    const provider = new ScriptedProvider([{ text: 'finished' }]);
    const outcome = await runAgent({
      agentId: 'agent-1',
      definition: makeDefinition(),
      task: 'Do the task.',
      provider,
      model: 'test-model',
      registry: createToolRegistry([tool.tool]),
      cwd: tempDir(),
      journal,
      resumeFrom: legacy,
      limits: { maxSteps: 3 },
    });
    expect(outcome).toMatchObject({ status: 'completed', answer: 'finished', steps: 3 });
    expect(provider.requests).toHaveLength(1);
    expect(verifyJournal(journal.events, { rerender: journalRerender() }).ok).toBe(true);
  });
});

describe('cost', () => {
  it('is unknown (null), not $0, for a model without a price; a cost budget says so at the start', async () => {
    const { outcome, events } = await runScripted(
      [{ text: 'hi', usage: { inputTokens: 10, outputTokens: 2 } }],
      {
        run: { model: 'my-local-model', limits: { maxCostUsd: 1 } },
      },
    );
    expect(outcome).toMatchObject({ status: 'completed', costUsd: null, usage: { inputTokens: 10 } });
    expect(events[0]).toMatchObject({
      type: 'Started',
      notices: [expect.stringContaining('cannot be enforced: no price is known for model my-local-model')],
    });
    expect(events.at(-1)).toMatchObject({ type: 'Completed', costUsd: null });
  });

  it('is counted against maxCostUsd for a priced model, before the next request', async () => {
    const step = {
      toolCalls: [{ name: 'echo', arguments: { value: 'x' } }],
      usage: { inputTokens: 1_000_000, outputTokens: 0 },
    };
    const { outcome, provider } = await runScripted([step, step], {
      tools: [echo().tool],
      allowUnused: true,
      run: { model: 'gpt-4.1-mini', limits: { maxCostUsd: 0.5, maxTotalTokens: 0 } },
    });
    // $0.40 after the first request, $0.80 after the second: the third is never sent.
    expect(provider.requests).toHaveLength(2);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'cost_budget' } });
    expect(outcome.costUsd).toBeCloseTo(0.8, 10);
  });
});
