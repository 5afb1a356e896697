/**
 * An agent stopped at each point of an approval (its journal cut where a crash would cut it),
 * resumed in process: it never asks twice for a decided call, never runs a denied one, and records
 * an approved call cut off before its result as interrupted instead of running it again.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../src/journal/canonical-json.ts';
import { INTERRUPTED_TOOL_RESULT } from '../../src/journal/constants.ts';
import type { AuditEvent } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { MASKED_ARGUMENTS_REASON } from '../../src/loop/resume.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import type { AgentChannels } from '../../src/loop/types.ts';
import type { ApprovalDecision, ApprovalRequest } from '../../src/protocol/approvals.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import planProvider, { planTask } from '../fixtures/approvals/plan-provider.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, recordingTool, tempDir } from './helpers.ts';

const definition = makeDefinition({
  name: 'asker',
  agentsMd: false,
  permissions: { allow: [], ask: ['act'], deny: [] },
});
const task = planTask([
  { name: 'act', args: { value: 'once' } },
  { name: 'act', args: { value: 'after' } },
]);

/** A channel whose decisions the test hands out, recording every request it is asked. */
function channel(decide?: (request: ApprovalRequest) => ApprovalDecision | undefined) {
  const asked: ApprovalRequest[] = [];
  const requestApproval: NonNullable<AgentChannels['requestApproval']> = (request, signal) => {
    asked.push(request);
    const decision = decide?.(request);
    if (decision) return Promise.resolve(decision);
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(null), { once: true }));
  };
  return { asked, channels: { requestApproval } };
}

/**
 * Runs the agent until `stopAt` says the journal so far is where a crash struck, and returns those
 * events (the run itself is cancelled and its later events thrown away, as a dead thread's are).
 */
async function journalCutAt(
  stopAt: (event: AuditEvent) => boolean,
  decide: (request: ApprovalRequest) => ApprovalDecision | undefined,
  planned = task,
): Promise<{ events: AuditEvent[]; ran: Record<string, unknown>[] }> {
  const { tool, calls } = recordingTool(
    'act',
    (args) => ({ ok: true, text: `acted ${String(args.value)}` }),
    false,
  );
  const journal = new MemoryJournal();
  const controller = new AbortController();
  let cut: AuditEvent[] | undefined;
  const { channels } = channel(decide);
  await runAgent({
    agentId: 'agent-1',
    definition,
    task: planned,
    provider: planProvider(),
    model: 'm',
    registry: createToolRegistry([tool]),
    cwd: tempDir(),
    systemPrompt: 'SYSTEM',
    journal: {
      append(input) {
        const event = journal.append(input);
        if (cut === undefined && stopAt(event)) {
          cut = [...journal.events];
          controller.abort(new Error('the thread died'));
        }
      },
    },
    channels,
    signal: controller.signal,
  });
  if (cut === undefined) throw new Error('the run never reached the cut point');
  return { events: cut, ran: [...calls] };
}

async function resume(
  events: readonly AuditEvent[],
  decide?: (request: ApprovalRequest) => ApprovalDecision | undefined,
  planned = task,
) {
  const { tool, calls } = recordingTool(
    'act',
    (args) => ({ ok: true, text: `acted ${String(args.value)}` }),
    false,
  );
  const journal = new MemoryJournal({ events });
  const { asked, channels } = channel(decide);
  const outcome = await runAgent({
    agentId: 'agent-1',
    definition,
    task: planned,
    provider: planProvider(),
    model: 'm',
    registry: createToolRegistry([tool]),
    cwd: tempDir(),
    systemPrompt: 'SYSTEM',
    journal,
    resumeFrom: events,
    channels,
  });
  return { outcome, events: journal.events, asked, ran: calls };
}

const approve = (): ApprovalDecision => ({ approved: true, by: 'person' });

describe('resuming an agent at each point of an approval', () => {
  it('stopped while waiting: waits again under the same request id, then runs the call once', async () => {
    const cut = await journalCutAt(
      (event) => event.type === 'ApprovalRequested',
      () => undefined,
    );
    expect(cut.ran).toEqual([]);
    const requested = eventsOf(cut.events, 'ApprovalRequested')[0];
    const resumed = await resume(cut.events, approve);
    expect(resumed.asked[0]).toMatchObject({ requestId: requested?.requestId, args: { value: 'once' } });
    // The first call is asked about again (same id, no new ApprovalRequested), then the second is new.
    expect(resumed.asked.map((request) => request.requestId)[0]).toBe(requested?.requestId);
    expect(eventsOf(resumed.events, 'ApprovalRequested')).toHaveLength(2);
    expect(resumed.ran).toEqual([{ value: 'once' }, { value: 'after' }]);
    expect(resumed.outcome).toMatchObject({ status: 'completed', answer: 'last result: acted after' });
  });

  it('stopped after approval, before the tool ran: records it as interrupted, never runs it nor asks again', async () => {
    const cut = await journalCutAt(
      (event) => event.type === 'ApprovalDecided',
      () => approve(),
    );
    expect(cut.ran).toEqual([]);
    const resumed = await resume(cut.events, approve);
    expect(resumed.asked.map((request) => request.args)).toEqual([{ value: 'after' }]);
    expect(resumed.ran).toEqual([{ value: 'after' }]);
    const first = eventsOf(resumed.events, 'ToolResult')[0];
    expect(first).toMatchObject({ ok: false, text: INTERRUPTED_TOOL_RESULT });
  });

  it('stopped after a denial, before its result: answers the denial, never runs it nor asks again', async () => {
    const cut = await journalCutAt(
      (event) => event.type === 'ApprovalDecided',
      (request) =>
        request.args.value === 'once' ? { approved: false, by: 'person', reason: 'no' } : undefined,
    );
    const resumed = await resume(cut.events, approve);
    expect(resumed.asked.map((request) => request.args)).toEqual([{ value: 'after' }]);
    expect(resumed.ran).toEqual([{ value: 'after' }]);
    expect(eventsOf(resumed.events, 'ToolResult')[0]).toMatchObject({
      ok: false,
      refused: true,
      text: '`act` was denied by a person: no. It did not run. Do not retry it as is.',
    });
  });

  it('stopped waiting past its deadline: a resumed agent times out at once by the recorded deadline', async () => {
    const short = makeDefinition({ ...definition });
    const journal = new MemoryJournal();
    const controller = new AbortController();
    const { tool } = recordingTool('act', () => ({ ok: true, text: 'acted' }), false);
    let cut: AuditEvent[] | undefined;
    await runAgent({
      agentId: 'agent-1',
      definition: short,
      task,
      provider: planProvider(),
      model: 'm',
      registry: createToolRegistry([tool]),
      cwd: tempDir(),
      systemPrompt: 'SYSTEM',
      permissions: { approvalTimeoutMs: 1 },
      journal: {
        append(input) {
          const event = journal.append(input);
          if (cut === undefined && event.type === 'ApprovalRequested') {
            cut = [...journal.events];
            controller.abort(new Error('stop'));
          }
        },
      },
      channels: channel().channels,
      signal: controller.signal,
    });
    const events = cut ?? [];
    const deadline = eventsOf(events, 'ApprovalRequested')[0]?.deadline;
    expect(typeof deadline).toBe('number');
    // The resumed run is given a long timeout: the deadline recorded in the journal still rules.
    const resumed = await resume(events, (request) =>
      request.args.value === 'after' ? approve() : undefined,
    );
    expect(eventsOf(resumed.events, 'ApprovalDecided')[0]).toMatchObject({ approved: false, by: 'timeout' });
    expect(resumed.ran).toEqual([{ value: 'after' }]);
  });

  it('without an approval channel (no supervisor), asks are denied and say how to allow the call', async () => {
    const { tool, calls } = recordingTool('act', () => ({ ok: true, text: 'acted' }), false);
    const journal = new MemoryJournal();
    const outcome = await runAgent({
      agentId: 'agent-1',
      definition,
      task: planTask([{ name: 'act', args: {} }]),
      provider: planProvider(),
      model: 'm',
      registry: createToolRegistry([tool]),
      cwd: tempDir(),
      systemPrompt: 'SYSTEM',
      journal,
    });
    expect(calls).toEqual([]);
    expect(outcome.status === 'completed' && outcome.answer).toContain(
      'nobody is there to give it (this agent runs without a supervisor or a person to ask; allow the call with a permissions rule)',
    );
  });

  it('stopped while waiting on a call with a secret in its arguments: closes it unrun, as the journal has them masked', async () => {
    const secret = 'sk-proj-AbCdEf0123456789xyz';
    const planned = planTask([
      { name: 'act', args: { value: secret } },
      { name: 'act', args: { value: 'after' } },
    ]);
    const cut = await journalCutAt(
      (event) => event.type === 'ApprovalRequested',
      () => undefined,
      planned,
    );
    expect(eventsOf(cut.events, 'ApprovalRequested')).toMatchObject([
      { args: { value: '[REDACTED]' }, argsMasked: true },
    ]);
    // No hash in the journal gives the secret away to a guess: none is the real arguments' hash.
    const realHash = sha256Hex(canonicalJson({ value: secret }));
    expect(JSON.stringify(cut.events)).not.toContain(realHash);
    const resumed = await resume(cut.events, approve, planned);
    // Never run with `[REDACTED]` in place of the value, nor asked about again.
    expect(resumed.ran).toEqual([{ value: 'after' }]);
    expect(resumed.asked.map((request) => request.args)).toEqual([{ value: 'after' }]);
    expect(eventsOf(resumed.events, 'ApprovalDecided')[0]).toMatchObject({
      approved: false,
      by: 'policy',
      reason: MASKED_ARGUMENTS_REASON,
    });
    expect(eventsOf(resumed.events, 'ToolResult')[0]).toMatchObject({ ok: false, refused: true });
    expect(resumed.outcome).toMatchObject({ status: 'completed', answer: 'last result: acted after' });
  });

  it('a journal written before argsMasked (argsHash of the real arguments) still closes a masked call unrun', async () => {
    const secret = 'sk-proj-AbCdEf0123456789xyz';
    const planned = planTask([
      { name: 'act', args: { value: secret } },
      { name: 'act', args: { value: 'after' } },
    ]);
    const cut = await journalCutAt(
      (event) => event.type === 'ApprovalRequested',
      () => undefined,
      planned,
    );
    // As an older troupe wrote it: no argsMasked, the hash of the arguments before masking.
    const old = cut.events.map((event) => {
      if (event.type !== 'ApprovalRequested') return event;
      const { argsMasked: _dropped, ...rest } = event;
      return { ...rest, argsHash: sha256Hex(canonicalJson({ value: secret })) };
    });
    const resumed = await resume(old, approve, planned);
    expect(resumed.ran).toEqual([{ value: 'after' }]);
    expect(eventsOf(resumed.events, 'ApprovalDecided')[0]).toMatchObject({
      approved: false,
      by: 'policy',
      reason: MASKED_ARGUMENTS_REASON,
    });
  });
});
