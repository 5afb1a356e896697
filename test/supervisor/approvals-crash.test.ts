/**
 * Thread deaths around an approval, on real threads: while a call waits for its decision, and
 * after it was approved but before the tool finished. No second ask, no second run, no run of a
 * denied call.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { progressLine } from '../../src/cli/shared/progress.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { INTERRUPTED_TOOL_RESULT } from '../../src/journal/constants.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { buildTranscript, transcriptEntries } from '../../src/run-dir/transcript.ts';
import { ApprovalBook } from '../../src/supervisor/approvals.ts';
import type { AgentApproval } from '../../src/supervisor/events.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { planTask } from '../fixtures/approvals/plan-provider.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/approvals');

const open: Supervisor[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const supervisor of open.splice(0)) await supervisor.close();
});

function definition(name: string, fields: Partial<AgentDefinition> = {}): AgentDefinition {
  return makeDefinition({ name, path: `/approvals/${name}.md`, agentsMd: false, ...fields });
}

function start(definitions: AgentDefinition[]) {
  const dir = tempDir('troupe-approval-crash-');
  const supervisor = new Supervisor({
    threads: 1,
    providers: { plan: { kind: 'module', module: path.join(fixtures, 'plan-provider.ts') } },
    toolModules: [{ module: path.join(fixtures, 'tools.ts') }],
    definitions,
    compat: false,
    mcpProjectFile: false,
    journalDir: path.join(dir, 'journals'),
    cwd: dir,
    heartbeat: { intervalMs: 250, timeoutMs: 6000 },
    restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
  });
  open.push(supervisor);
  const journal = (agentId: string): AuditEvent[] =>
    readJournal(path.join(dir, 'journals', `${agentId}.jsonl`)).events;
  const actions = (): string[][] => {
    const file = path.join(dir, 'actions.log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split('\t'));
  };
  return { supervisor, journal, actions };
}

/** Resolves on the `n`-th report of a request reaching the supervisor (a wait, first or repeated). */
function requestReports() {
  const seen: string[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const original = ApprovalBook.prototype.requested;
  vi.spyOn(ApprovalBook.prototype, 'requested').mockImplementation(function (
    this: ApprovalBook,
    ref,
    request,
  ) {
    seen.push(request.requestId);
    for (const waiter of waiters) if (seen.length >= waiter.n) waiter.resolve();
    return original.call(this, ref, request);
  });
  return {
    seen,
    reached: (n: number) =>
      new Promise<void>((resolve) => {
        if (seen.length >= n) resolve();
        else waiters.push({ n, resolve });
      }),
  };
}

const ofType = <T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T) =>
  events.filter((event): event is EventOf<T> => event.type === type);

describe('thread deaths around an approval', () => {
  it('the thread dies while a call waits: the agent waits again without a second ask, and runs the call once when approved', async () => {
    const asker = definition('asker', { permissions: { allow: [], ask: ['record_action'], deny: [] } });
    const crasher = definition('crasher');
    const { supervisor, journal, actions } = start([asker, crasher]);
    const reports = requestReports();
    const approvals: AgentApproval[] = [];
    const first = new Promise<AgentApproval>((resolve) =>
      supervisor.on('agent:approval', (event) => {
        approvals.push(event);
        resolve(event);
      }),
    );
    const restarted = new Promise<void>((resolve) =>
      supervisor.on('agent:restarted', (event) => {
        if (event.agent === 'asker') resolve();
      }),
    );

    const gated = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'gated' } }]),
    });
    const asked = await first;
    const crash = supervisor.spawn('crasher', {
      task: planTask([
        { name: 'crash_thread', args: {} },
        { name: 'record_action', args: { note: 'after' } },
      ]),
    });
    await restarted;
    // The resumed agent has waited again: its request reached the supervisor a second time.
    await reports.reached(2);
    expect(reports.seen).toEqual([asked.request.requestId, asked.request.requestId]);
    expect(approvals).toHaveLength(1);
    expect(supervisor.pendingApprovals()).toEqual([asked.request]);

    await supervisor.approve(asked.request.requestId);
    expect(await gated.result).toMatchObject({ status: 'completed', answer: 'last result: recorded gated' });
    expect(await crash.result).toMatchObject({ status: 'completed' });
    expect(actions().filter(([id]) => id === gated.id)).toEqual([[gated.id, 'record_action', 'gated']]);
    expect(approvals).toHaveLength(1);
    const events = journal(gated.id);
    expect(ofType(events, 'ApprovalRequested')).toHaveLength(1);
    const [resumed] = ofType(events, 'Resumed');
    const [call] = ofType(events, 'ToolCall').filter((e) => e.name === 'record_action');
    expect(ofType(events, 'Resumed')).toHaveLength(1);
    // The call waits again under its request id: said so, not reported as cut off.
    expect(resumed).toMatchObject({ pendingCallIds: [call?.callId], awaitingCallIds: [call?.callId] });
    expect(resumed && progressLine(resumed)).toBe(
      `resumed at round 2 · 1 call (${call?.callId}) waiting again`,
    );
    const transcript = buildTranscript(events);
    const tool = transcript && transcriptEntries(transcript).find((entry) => entry.kind === 'tool');
    expect(tool).toMatchObject({ callId: call?.callId, interrupted: false });
    expect(ofType(events, 'ApprovalDecided')).toMatchObject([{ approved: true, by: 'person' }]);
  });

  it('the thread dies after approval, before the tool finished: no second ask, no second run', async () => {
    const asker = definition('asker', { permissions: { allow: [], ask: ['crash_on_run'], deny: [] } });
    const { supervisor, journal, actions } = start([asker]);
    const reports = requestReports();
    const approvals: AgentApproval[] = [];
    supervisor.on('agent:approval', (event) => {
      approvals.push(event);
      void supervisor.approve(event.request.requestId);
    });
    const handle = supervisor.spawn('asker', {
      task: planTask([{ name: 'crash_on_run', args: { note: 'boom' } }]),
    });
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'completed', answer: `last result: ${INTERRUPTED_TOOL_RESULT}` });
    expect(actions()).toEqual([[handle.id, 'crash_on_run', 'boom']]);
    expect(approvals).toHaveLength(1);
    expect(reports.seen).toHaveLength(1);
    const events = journal(handle.id);
    expect(ofType(events, 'ApprovalDecided')).toMatchObject([{ approved: true }]);
    expect(ofType(events, 'ToolResult')).toMatchObject([{ ok: false, text: INTERRUPTED_TOOL_RESULT }]);
  });

  it('a denied call stays denied after its thread dies: never run, never asked again', async () => {
    const asker = definition('asker', { permissions: { allow: [], ask: ['record_action'], deny: [] } });
    const crasher = definition('crasher');
    const { supervisor, journal, actions } = start([asker, crasher]);
    const approvals: AgentApproval[] = [];
    supervisor.on('agent:approval', (event) => {
      approvals.push(event);
      void supervisor.deny(event.request.requestId, 'no');
    });
    const restarted = new Promise<void>((resolve) =>
      supervisor.on('agent:restarted', (event) => {
        if (event.agent === 'asker') resolve();
      }),
    );
    // The asker is denied, then waits for an instruction; the crasher takes the thread down.
    const gated = supervisor.spawn('asker', {
      task: planTask([
        { name: 'record_action', args: { note: 'denied' } },
        { name: 'wait_for_instruction', args: {} },
      ]),
    });
    await new Promise<void>((resolve) => supervisor.on('agent:waiting', () => resolve()));
    const crash = supervisor.spawn('crasher', { task: planTask([{ name: 'crash_thread', args: {} }]) });
    await restarted;
    gated.send('finish');
    expect(await gated.result).toMatchObject({
      status: 'completed',
      answer: 'last result: Instruction: finish',
    });
    await crash.result;
    expect(actions().filter(([id]) => id === gated.id)).toEqual([]);
    expect(approvals).toHaveLength(1);
    expect(ofType(journal(gated.id), 'ToolResult')[0]).toMatchObject({ refused: true, ok: false });
  });
});
