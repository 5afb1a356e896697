/**
 * A parent resumed in a new supervisor (`spawn(..., { resume: true })`) after the one that ran it
 * stopped: its children are adopted from their journals, and a `spawn_agent` call cut off by the
 * stop gets the child it started. The stop is made exact: a finished run's journals are cut back to
 * what a kill at a chosen event leaves (a journal is append-only, so a prefix of its lines is what a
 * crash there leaves).
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_STARTED_HEAD_BYTES } from '../../src/constants.ts';
import type { ChildStart } from '../../src/engines/engine.ts';
import type { AuditEvent, AuditEventInput, EventOf } from '../../src/journal/events.ts';
import { forkedInputs, writeFork } from '../../src/journal/fork.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import {
  ADOPTION_SCAN_WARNING_CODE,
  cutOffChildren,
  instructionsFor,
  movedInstructions,
  parentJournal,
  redeliveries,
} from '../../src/supervisor/adoption.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { fixtures, orchestratorDefinition, policySupervisor, tempDir } from './helpers.ts';

const supervisors: Supervisor[] = [];
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});

function supervisorFor(journalDir: string): Supervisor {
  const supervisor = policySupervisor({
    cwd: tempDir(),
    journalDir,
    providers: { adoption: { kind: 'module', module: path.join(fixtures, 'adoption-provider.ts') } },
    defaultProvider: 'adoption',
  });
  supervisors.push(supervisor);
  return supervisor;
}

const SPLIT = 'Split the work between two workers.';
const journalOf = (dir: string, id: string) => path.join(dir, `${id}.jsonl`);
const eventsOf = (dir: string, id: string) => readJournal(journalOf(dir, id)).events;

/** Keeps the lines of the journal up to and including the first event `at` accepts. */
function cutAfter(file: string, at: (event: AuditEvent) => boolean): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  const index = readJournal(file).events.findIndex(at);
  expect(index).toBeGreaterThanOrEqual(0);
  writeFileSync(file, `${lines.slice(0, index + 1).join('\n')}\n`);
}

/** A finished orchestration: the parent's id and its two children's, in spawn order. */
async function finishedRun(journalDir: string, task = SPLIT) {
  const definition = await orchestratorDefinition();
  const supervisor = supervisorFor(journalDir);
  const parent = supervisor.spawn(definition, { task });
  expect(await parent.result).toMatchObject({ status: 'completed' });
  await supervisor.close();
  const spawns = eventsOf(journalDir, parent.id).filter(
    (event): event is EventOf<'ToolResult'> => event.type === 'ToolResult' && event.name === 'spawn_agent',
  );
  const children = spawns.map((result) => (result.data as { agentId: string }).agentId);
  expect(children).toHaveLength(2);
  return { definition, parentId: parent.id, first: children[0] ?? '', second: children[1] ?? '' };
}

function resume(
  journalDir: string,
  definition: Awaited<ReturnType<typeof orchestratorDefinition>>,
  id: string,
  task = SPLIT,
) {
  return supervisorFor(journalDir).spawn(definition, { id, task, resume: true });
}

const terminals = (events: readonly AuditEvent[]) =>
  events.filter((event) => event.type === 'Completed' || event.type === 'Failed');

describe('a parent resumed in a new supervisor', () => {
  it('adopts its children: a finished one with its outcome, an unfinished one resumed once', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    // Killed while the parent awaited: the first child had finished, the second had only started.
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    cutAfter(journalOf(journalDir, second), (e) => e.type === 'Started');
    const firstBefore = readFileSync(journalOf(journalDir, first), 'utf8');

    const outcome = await resume(journalDir, definition, parentId).result;

    // Without adoption the new supervisor refused both ids and the parent never got its result.
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    expect(readdirSync(journalDir).sort()).toEqual(
      [first, second, parentId].map((id) => `${id}.jsonl`).sort(),
    );
    expect(readFileSync(journalOf(journalDir, first), 'utf8')).toBe(firstBefore);
    const secondEvents = eventsOf(journalDir, second);
    expect(secondEvents.filter((e) => e.type === 'Resumed')).toHaveLength(1);
    expect(terminals(secondEvents)).toMatchObject([{ type: 'Completed', result: { worker: 'Worker 2' } }]);
    // The await cut off by the stop only waits: it ran again, rather than coming back interrupted.
    const awaits = eventsOf(journalDir, parentId).filter(
      (e) => e.type === 'ToolResult' && e.name === 'await_agents',
    );
    expect(awaits).toMatchObject([{ ok: true }]);
  });

  it('starts a child its spawn result names that never started, with that id, once', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    // The second child was still pending (no thread had it) when the supervisor stopped.
    rmSync(journalOf(journalDir, second));

    const outcome = await resume(journalDir, definition, parentId).result;

    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    const events = eventsOf(journalDir, second);
    expect(events[0]).toMatchObject({ type: 'Started', parentId, task: 'Worker 2: complete at once.' });
    expect(events.filter((e) => e.type === 'Resumed')).toEqual([]);
    expect(terminals(events)).toMatchObject([{ type: 'Completed' }]);
    expect(readdirSync(journalDir)).toHaveLength(3);
  });

  it("records a cut-off spawn_agent whose child exists with that child's id: no second child", async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    const spawnCalls = eventsOf(journalDir, parentId).filter(
      (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
    );
    const cutOff = spawnCalls[1]?.callId ?? '';
    expect(eventsOf(journalDir, second)[0]).toMatchObject({ type: 'Started', spawnCallId: cutOff });
    // Killed after the second spawn_agent started its child, before the call's result was written.
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    cutAfter(journalOf(journalDir, second), (e) => e.type === 'Started');

    const outcome = await resume(journalDir, definition, parentId).result;

    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    // Without the fix the call came back interrupted and the model spawned a third worker.
    expect(readdirSync(journalDir)).toHaveLength(3);
    const result = eventsOf(journalDir, parentId).find((e) => e.type === 'ToolResult' && e.callId === cutOff);
    expect(result).toMatchObject({
      ok: true,
      text: `Spawned subagent ${second} (worker).`,
      data: { agentId: second },
    });
    expect(terminals(eventsOf(journalDir, second))).toHaveLength(1);
  });

  it('finds the child of a cut-off call by its agent and task in a journal without spawnCallId', async () => {
    const journalDir = tempDir();
    const { definition, parentId, second } = await finishedRun(journalDir);
    const cutOff =
      eventsOf(journalDir, parentId).filter(
        (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
      )[1]?.callId ?? '';
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    // The child's journal as a troupe before spawnCallId wrote it: its Started, chained afresh.
    const started = eventsOf(journalDir, second)[0] as EventOf<'Started'>;
    const { seq: _seq, prev: _prev, hash: _hash, spawnCallId: _call, ...body } = started;
    writeFileSync(journalOf(journalDir, second), '');
    const writer = JournalWriter.open(journalOf(journalDir, second));
    writer.append(body as AuditEventInput);
    writer.close();

    const outcome = await resume(journalDir, definition, parentId).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    expect(readdirSync(journalDir)).toHaveLength(3);
    expect(
      eventsOf(journalDir, parentId).find((e) => e.type === 'ToolResult' && e.callId === cutOff),
    ).toMatchObject({ ok: true, data: { agentId: second } });
  });

  it('keeps recording a cut-off spawn_agent as interrupted when it started no child', async () => {
    const journalDir = tempDir();
    const { definition, parentId, second } = await finishedRun(journalDir);
    const cutOff =
      eventsOf(journalDir, parentId).filter(
        (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
      )[1]?.callId ?? '';
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    // Killed before the child was started: it left no journal.
    rmSync(journalOf(journalDir, second));

    const outcome = await resume(journalDir, definition, parentId).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    expect(
      eventsOf(journalDir, parentId).find((e) => e.type === 'ToolResult' && e.callId === cutOff),
    ).toMatchObject({ ok: false, text: expect.stringContaining('interrupted') });
    // The model spawned the second worker again: a new child, not the one that never existed.
    expect(readdirSync(journalDir)).toHaveLength(3);
  });
});

/**
 * Rewrites `file` (a journal) as agent `agentId` spawned by `parentId`, keeping its events up to its
 * end, and with `extra` (bodies) appended before that end when given.
 */
function rewriteAs(
  from: string,
  to: string,
  agentId: string,
  parentId: string,
  extra: (round: number) => AuditEventInput[] = () => [],
): void {
  const events = readJournal(from).events;
  rmSync(to, { force: true });
  const writer = JournalWriter.open(to);
  const body = (event: AuditEvent) => {
    const { seq: _seq, prev: _prev, hash: _hash, ...rest } = event as AuditEvent & Record<string, unknown>;
    return {
      ...rest,
      agentId,
      ...(event.type === 'Started' ? { parentId } : {}),
    } as unknown as AuditEventInput;
  };
  for (const event of events) {
    if (event.type === 'Completed' || event.type === 'Failed') {
      const round = events.filter((e) => e.type === 'InferenceSubmitted').length;
      for (const input of extra(round)) writer.append(input);
    }
    writer.append(body(event));
  }
  writer.close();
}

describe('a parent resumed in a new supervisor, under a finished child orchestrator', () => {
  it('adopts the finished child’s own finished children too: the whole tree’s usage', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    // The first child had spawned a grandchild (a finished one) before it finished itself.
    const grandchild = `${first}-g`;
    const spawn = (round: number): AuditEventInput[] => [
      {
        type: 'ToolCall',
        agentId: first,
        round,
        callId: 'g-call',
        name: 'spawn_agent',
        modelName: 'spawn_agent',
        args: { agent: 'worker', task: 'Grandchild' },
      },
      {
        type: 'ToolResult',
        agentId: first,
        round,
        callId: 'g-call',
        name: 'spawn_agent',
        ok: true,
        projectionAccepted: true,
        text: `Spawned subagent ${grandchild} (worker).`,
        stateUpdates: [],
        displayedStateKeys: [],
        data: { agentId: grandchild },
      },
    ];
    const copy = path.join(journalDir, 'first.copy');
    writeFileSync(copy, readFileSync(journalOf(journalDir, first)));
    rewriteAs(copy, journalOf(journalDir, first), first, parentId, spawn);
    rmSync(copy);
    rewriteAs(journalOf(journalDir, second), journalOf(journalDir, grandchild), grandchild, first);
    const usageOf = (id: string) => {
      const end = eventsOf(journalDir, id).findLast((e) => e.type === 'Completed');
      return end?.type === 'Completed' ? end.usage.inputTokens : Number.NaN;
    };

    const supervisor = supervisorFor(journalDir);
    const outcome = await supervisor.spawn(definition, { id: parentId, task: SPLIT, resume: true }).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    // Without the fix the grandchild was unknown to the new supervisor and its usage left out.
    expect(supervisor.handle(grandchild)).toMatchObject({ id: grandchild, parentId: first });
    expect(supervisor.treeUsage(first)?.usage.inputTokens).toBe(usageOf(first) + usageOf(grandchild));
    expect(supervisor.treeUsage(parentId)?.usage.inputTokens).toBe(
      usageOf(parentId) + usageOf(first) + usageOf(second) + usageOf(grandchild),
    );
    // Nothing ran again: the grandchild's journal ends once.
    expect(terminals(eventsOf(journalDir, grandchild))).toHaveLength(1);
  });
});

describe('a parent resumed in a new supervisor, leaving no descendant unfinished', () => {
  it('adopts the child of a cut-off spawn_agent whose Started line is over 1 MiB', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    const cutOff =
      eventsOf(journalDir, parentId).filter(
        (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
      )[1]?.callId ?? '';
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    // The child's Started carries 1.5 MiB of metadata (sorted before parentId): only its Started.
    const started = eventsOf(journalDir, second)[0] as EventOf<'Started'>;
    const { seq: _seq, prev: _prev, hash: _hash, ...body } = started;
    writeFileSync(journalOf(journalDir, second), '');
    const writer = JournalWriter.open(journalOf(journalDir, second));
    writer.append({ ...body, metadata: { blob: 'm'.repeat(1536 * 1024) } } as AuditEventInput);
    writer.close();
    expect(readFileSync(journalOf(journalDir, second)).length).toBeGreaterThan(1024 * 1024);

    const outcome = await resume(journalDir, definition, parentId).result;

    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    // Without the fix the child was not found: the call came back interrupted, a third worker ran,
    // and this one stayed unfinished.
    expect(readdirSync(journalDir)).toHaveLength(3);
    expect(
      eventsOf(journalDir, parentId).find((e) => e.type === 'ToolResult' && e.callId === cutOff),
    ).toMatchObject({ ok: true, data: { agentId: second } });
    expect(terminals(eventsOf(journalDir, second))).toMatchObject([{ type: 'Completed' }]);
  });

  it('ends an unfinished grandchild under a finished child Failed(cancelled), once, and says so', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    // The first child had spawned a grandchild and finished; the grandchild was still running.
    const grandchild = `${first}-g`;
    const spawn = (round: number): AuditEventInput[] => [
      {
        type: 'ToolCall',
        agentId: first,
        round,
        callId: 'g-call',
        name: 'spawn_agent',
        modelName: 'spawn_agent',
        args: { agent: 'worker', task: 'Grandchild' },
      },
      {
        type: 'ToolResult',
        agentId: first,
        round,
        callId: 'g-call',
        name: 'spawn_agent',
        ok: true,
        projectionAccepted: true,
        text: `Spawned subagent ${grandchild} (worker).`,
        stateUpdates: [],
        displayedStateKeys: [],
        data: { agentId: grandchild },
      },
    ];
    const copy = path.join(journalDir, 'first.copy');
    writeFileSync(copy, readFileSync(journalOf(journalDir, first)));
    rewriteAs(copy, journalOf(journalDir, first), first, parentId, spawn);
    rmSync(copy);
    rewriteAs(journalOf(journalDir, second), journalOf(journalDir, grandchild), grandchild, first);
    cutAfter(journalOf(journalDir, grandchild), (e) => e.type === 'InferenceSubmitted');

    const supervisor = supervisorFor(journalDir);
    const failed: string[] = [];
    supervisor.on('agent:failed', (event) => failed.push(event.agentId));
    const outcome = await supervisor.spawn(definition, { id: parentId, task: SPLIT, resume: true }).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    // Without the fix the library path left it unfinished forever (only troupe resume ended it).
    const events = eventsOf(journalDir, grandchild);
    expect(terminals(events)).toMatchObject([
      {
        type: 'Failed',
        reason: 'cancelled',
        error: { code: 'cancelled', fields: { parentId: first } },
      },
    ]);
    expect(verifyJournalFile(journalOf(journalDir, grandchild)).ok).toBe(true);
    expect(failed).toEqual([grandchild]);
    expect(await supervisor.handle(grandchild)?.result).toMatchObject({
      status: 'failed',
      reason: 'cancelled',
    });
    await supervisor.close();
    // A second resume finds it ended: nothing is appended again.
    const again = supervisorFor(journalDir);
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    await again.spawn(definition, { id: parentId, task: SPLIT, resume: true }).result;
    expect(terminals(eventsOf(journalDir, grandchild))).toHaveLength(1);
  });

  it('ends the unfinished children of a resumed agent whose journal had ended', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    // The parent had finished; its second child was killed mid-run (a child it did not await).
    cutAfter(journalOf(journalDir, second), (e) => e.type === 'InferenceSubmitted');
    const firstBefore = readFileSync(journalOf(journalDir, first), 'utf8');

    const supervisor = supervisorFor(journalDir);
    const outcome = await supervisor.spawn(definition, { id: parentId, task: SPLIT, resume: true }).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    // Without the fix only troupe resume ended it: the library path left its journal open.
    expect(terminals(eventsOf(journalDir, second))).toMatchObject([
      { type: 'Failed', reason: 'cancelled', error: { fields: { parentId } } },
    ]);
    expect(readFileSync(journalOf(journalDir, first), 'utf8')).toBe(firstBefore);
  });
  it('ends an unfinished grandchild the finished child’s journal does not name, as troupe resume does', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    // The first child finished; a grandchild naming it as parent (a program's spawn with `parent`,
    // or the child of a call the first child ended before answering) was still running.
    const grandchild = `${first}-stray`;
    rewriteAs(journalOf(journalDir, second), journalOf(journalDir, grandchild), grandchild, first);
    cutAfter(journalOf(journalDir, grandchild), (e) => e.type === 'InferenceSubmitted');

    const supervisor = supervisorFor(journalDir);
    const failed: string[] = [];
    supervisor.on('agent:failed', (event) => failed.push(event.agentId));
    const outcome = await supervisor.spawn(definition, { id: parentId, task: SPLIT, resume: true }).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    // Without the fix only troupe resume ended it: the library path searched for unnamed children
    // of the resumed agent only, and left this one's journal open.
    expect(terminals(eventsOf(journalDir, grandchild))).toMatchObject([
      { type: 'Failed', reason: 'cancelled', error: { code: 'cancelled', fields: { parentId: first } } },
    ]);
    expect(verifyJournalFile(journalOf(journalDir, grandchild)).ok).toBe(true);
    expect(failed).toEqual([grandchild]);
  });
});

describe('a parent resumed in a new supervisor, with an unfinished child its journal does not name', () => {
  it.each([
    ['runs again (no spawn_agent call of it cut off)', true],
    ['had ended', false],
  ])('ends that child Failed(cancelled) when the parent %s, as troupe resume does', async (_name, cut) => {
    const journalDir = tempDir();
    const { definition, parentId, second } = await finishedRun(journalDir);
    if (cut)
      cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    // A child of the parent's that its journal does not name (a program's spawn with `parent`),
    // killed mid-run: nothing will await it.
    rewriteAs(journalOf(journalDir, second), journalOf(journalDir, 'stray'), 'stray', parentId);
    cutAfter(journalOf(journalDir, 'stray'), (e) => e.type === 'Started');

    const outcome = await resume(journalDir, definition, parentId).result;

    expect(outcome).toMatchObject({ status: 'completed' });
    // Without the fix only troupe resume ended it; the library path left its journal open.
    expect(terminals(eventsOf(journalDir, 'stray'))).toMatchObject([
      { type: 'Failed', reason: 'cancelled', error: { fields: { parentId } } },
    ]);
    expect(verifyJournalFile(journalOf(journalDir, 'stray')).ok).toBe(true);
  });
});

describe('a parent resumed in a new supervisor, beside a journal too long to examine', () => {
  it('warns once per resume, not once per finished descendant searched under', async () => {
    const journalDir = tempDir();
    const { definition, parentId } = await finishedRun(journalDir);
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    // A journal whose first line holds no ids within MAX_STARTED_HEAD_BYTES: no search can read it.
    writeFileSync(journalOf(journalDir, 'huge'), `{"pad":"${'x'.repeat(MAX_STARTED_HEAD_BYTES + 16)}"}\n`);
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      if ((warning as { code?: unknown }).code === ADOPTION_SCAN_WARNING_CODE) warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const outcome = await resume(journalDir, definition, parentId).result;
      expect(outcome).toMatchObject({ status: 'completed' });
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    // Without the fix each search warned: the parent's, and one under each finished child (3).
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toContain('huge.jsonl');
  });

  it('names the journal once per supervisor, however many agents it resumes', async () => {
    const journalDir = tempDir();
    const runs = [await finishedRun(journalDir), await finishedRun(journalDir)];
    for (const { parentId } of runs)
      cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    writeFileSync(journalOf(journalDir, 'huge'), `{"pad":"${'x'.repeat(MAX_STARTED_HEAD_BYTES + 16)}"}\n`);
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      if ((warning as { code?: unknown }).code === ADOPTION_SCAN_WARNING_CODE) warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      // One long-lived supervisor resumes both parents, one after the other.
      const supervisor = supervisorFor(journalDir);
      for (const { definition, parentId } of runs) {
        const outcome = await supervisor.spawn(definition, { id: parentId, task: SPLIT, resume: true })
          .result;
        expect(outcome).toMatchObject({ status: 'completed' });
      }
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    // Without the fix each resume warned, both naming the same journal.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toContain('huge.jsonl');
  });
});

describe('a retry of a parent, resumed in a new supervisor', () => {
  it('adopts the children its journal names, as a first attempt resumed does', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    // The parent failed while it awaited (its end does not matter here), and its retry, a fork of
    // its journal up to there, was killed before it ran on: the first child had finished, the
    // second had only started.
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.name === 'await_agents');
    cutAfter(journalOf(journalDir, second), (e) => e.type === 'Started');
    const retryId = `${parentId}-r2`;
    const writer = JournalWriter.open(journalOf(journalDir, retryId));
    writeFork(writer, forkedInputs(eventsOf(journalDir, parentId), retryId));
    writer.close();
    const firstBefore = readFileSync(journalOf(journalDir, first), 'utf8');

    const outcome = await supervisorFor(journalDir).spawn(definition, {
      id: retryId,
      task: SPLIT,
      resume: true,
      retryOf: parentId,
    }).result;

    // Without adoption the retry's await_agents knew none of its children.
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    expect(readFileSync(journalOf(journalDir, first), 'utf8')).toBe(firstBefore);
    const secondEvents = eventsOf(journalDir, second);
    expect(secondEvents.filter((e) => e.type === 'Resumed')).toHaveLength(1);
    expect(terminals(secondEvents)).toMatchObject([{ type: 'Completed' }]);
    expect(readdirSync(journalDir)).toHaveLength(4);
  });

  it('matches a cut-off spawn_agent copied from the failed attempt to the child that attempt started', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    const cutOff =
      eventsOf(journalDir, parentId).filter(
        (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
      )[1]?.callId ?? '';
    // The attempt died between its second spawn_agent call (whose child had started) and the
    // call's result; its retry forked its journal (the cut-off call copied) and was killed before
    // it ran on. The child's Started names the attempt, not the retry.
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    cutAfter(journalOf(journalDir, second), (e) => e.type === 'Started');
    const retryId = `${parentId}-r2`;
    const writer = JournalWriter.open(journalOf(journalDir, retryId));
    writeFork(writer, forkedInputs(eventsOf(journalDir, parentId), retryId));
    writer.close();

    const outcome = await supervisorFor(journalDir).spawn(definition, {
      id: retryId,
      task: SPLIT,
      resume: true,
      retryOf: parentId,
    }).result;

    // Without the fix the retry searched only for children naming itself: the call came back
    // interrupted, the model spawned a third worker, and this one was ended as an orphan.
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    expect(readdirSync(journalDir)).toHaveLength(4);
    expect(
      eventsOf(journalDir, retryId).find((e) => e.type === 'ToolResult' && e.callId === cutOff),
    ).toMatchObject({ ok: true, data: { agentId: second } });
    expect(terminals(eventsOf(journalDir, second))).toMatchObject([{ type: 'Completed' }]);
  });

  it('a retry of a retry, in a third supervisor, finds the child that names the first attempt', async () => {
    const journalDir = tempDir();
    const { definition, parentId, first, second } = await finishedRun(journalDir);
    const cutOff =
      eventsOf(journalDir, parentId).filter(
        (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'spawn_agent',
      )[1]?.callId ?? '';
    // Session 1: the first attempt failed between its second spawn_agent call (whose child had
    // started, naming it) and the call's result (its end does not matter here).
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    cutAfter(journalOf(journalDir, second), (e) => e.type === 'Started');
    // Session 2: its retry forked its journal, as an engine forks one (recording where from), and
    // failed too before it answered the copied call.
    const secondAttempt = `${parentId}-r2`;
    const writer = JournalWriter.open(journalOf(journalDir, secondAttempt));
    writeFork(writer, forkedInputs(eventsOf(journalDir, parentId), secondAttempt, parentId));
    writer.close();

    // Session 3: a new supervisor retries the second attempt; it never ran the first.
    const thirdAttempt = `${parentId}-r3`;
    const outcome = await supervisorFor(journalDir).spawn(definition, {
      id: thirdAttempt,
      task: SPLIT,
      retryOf: secondAttempt,
    }).result;

    expect(eventsOf(journalDir, thirdAttempt)[0]).toMatchObject({
      type: 'Started',
      forkedFrom: [secondAttempt, parentId],
    });
    // Without the fix the search looked under the third and second attempts' ids only: the call
    // came back interrupted, the model spawned a third worker, and this one was never reached.
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    expect(readdirSync(journalDir)).toHaveLength(5);
    expect(
      eventsOf(journalDir, thirdAttempt).find((e) => e.type === 'ToolResult' && e.callId === cutOff),
    ).toMatchObject({ ok: true, data: { agentId: second } });
    expect(terminals(eventsOf(journalDir, second))).toMatchObject([{ type: 'Completed' }]);
  });
});

describe('a parent resumed in a new supervisor, with instructions on their way', () => {
  it('delivers a cut-off send_instruction to the child that goes on, and what it was sent before', async () => {
    const journalDir = tempDir();
    const task = 'Split the work between two workers and instruct them.';
    const { definition, parentId, first, second } = await finishedRun(journalDir, task);
    const sends = eventsOf(journalDir, parentId).filter(
      (e): e is EventOf<'ToolCall'> => e.type === 'ToolCall' && e.name === 'send_instruction',
    );
    expect(sends.map((call) => call.args?.agentId)).toEqual([first, second]);
    const cutOff = sends[1]?.callId ?? '';
    // Killed while the second send ran; neither worker had read its instruction yet.
    cutAfter(journalOf(journalDir, parentId), (e) => e.type === 'ToolCall' && e.callId === cutOff);
    for (const child of [first, second]) cutAfter(journalOf(journalDir, child), (e) => e.type === 'Waiting');

    const outcome = await resume(journalDir, definition, parentId, task).result;

    expect(outcome).toMatchObject({
      status: 'completed',
      result: { awaited: [`${first}:completed`, `${second}:completed`].sort() },
    });
    const parentEvents = eventsOf(journalDir, parentId);
    // The send that finished says at which index the child gets it: adoption keys by it.
    expect(
      parentEvents.find(
        (e) => e.type === 'ToolResult' && e.name === 'send_instruction' && e.callId !== cutOff,
      ),
    ).toMatchObject({ ok: true, data: { agentId: first, index: 0 } });
    // Without the fix the call came back interrupted and the model sent the instruction again.
    expect(parentEvents.find((e) => e.type === 'ToolResult' && e.callId === cutOff)).toMatchObject({
      ok: true,
      text: `Instruction queued for ${second}.`,
    });
    expect(parentEvents.filter((e) => e.type === 'ToolCall' && e.name === 'send_instruction')).toHaveLength(
      2,
    );
    for (const child of [first, second]) {
      const events = eventsOf(journalDir, child);
      expect(events.filter((e) => e.type === 'Instructed')).toMatchObject([
        { index: 0, text: `do the part of ${child}` },
      ]);
      // Where the parent's instruction now sits, by its call: a later adoption keys by it.
      const call = parentEvents.find(
        (e) => e.type === 'ToolCall' && e.name === 'send_instruction' && e.args?.agentId === child,
      );
      expect(events.find((e) => e.type === 'Resumed')).toMatchObject({
        instructionIndices: [{ callSeq: call?.seq, index: 0 }],
      });
      expect(terminals(events)).toMatchObject([
        { type: 'Completed', result: { instruction: `do the part of ${child}` } },
      ]);
    }
  });
});

describe('cutOffChildren', () => {
  const started = (agentId: string, extra: Partial<ChildStart>): ChildStart => ({
    agentId,
    agent: 'worker',
    task: 'T',
    ...extra,
  });

  it('matches by spawnCallId first, and by agent and task only journals without one', () => {
    const calls = [
      { callId: 'c1', args: { agent: 'worker', task: 'T' } },
      { callId: 'c2', args: { agent: 'worker', task: 'T' } },
    ];
    const found = cutOffChildren(
      calls,
      [
        started('other-call', { spawnCallId: 'c9' }),
        started('old', {}),
        started('new', { spawnCallId: 'c1' }),
      ],
      new Set(),
    );
    expect(found.map(({ call, started: s }) => [call.callId, s.agentId])).toEqual([
      ['c1', 'new'],
      ['c2', 'old'],
    ]);
  });

  it('leaves out children already known from a spawn result', () => {
    const found = cutOffChildren(
      [{ callId: 'c1', args: { agent: 'worker', task: 'T' } }],
      [started('known', {})],
      new Set(['known']),
    );
    expect(found).toEqual([]);
  });
});

describe('instructionsFor, with a program’s own handle.send to the same child between', () => {
  const instructed = (index: number, text: string) =>
    ({ type: 'Instructed', agentId: 'c', index, text }) as AuditEvent;
  /** A parent's journal: it sent each of `texts` to child `c`, the engine giving each its index. */
  const parentEvents = (sends: readonly { text: string; index?: number }[]) => {
    const events: Record<string, unknown>[] = [{ type: 'Started', agentId: 'p', seq: 0 }];
    sends.forEach(({ text, index }, i) => {
      events.push({
        type: 'ToolCall',
        agentId: 'p',
        callId: `s${i}`,
        name: 'send_instruction',
        args: { agentId: 'c', text },
      });
      events.push({
        type: 'ToolResult',
        agentId: 'p',
        callId: `s${i}`,
        name: 'send_instruction',
        ok: true,
        text: 'Instruction queued for c.',
        ...(index === undefined ? {} : { data: { agentId: 'c', index } }),
      });
    });
    return events as unknown as AuditEvent[];
  };
  const sentTo = (events: AuditEvent[]) => parentJournal(events)?.sent.get('c') ?? [];

  it('delivers a parent’s instruction the child had not read, at its turn, once', () => {
    // The parent sent A (0) and C (2); the program sent B (1) between. The child read A and B.
    const sent = sentTo(
      parentEvents([
        { text: 'A', index: 0 },
        { text: 'C', index: 2 },
      ]),
    );
    expect(sent).toEqual([
      { text: 'A', index: 0 },
      { text: 'C', index: 2 },
    ]);
    // Numbered in send order, C was taken for the B the child read at 1, and never delivered.
    expect(instructionsFor([instructed(0, 'A'), instructed(1, 'B')], sent)).toEqual(['A', 'B', 'C']);
    // Read all three: nothing twice.
    expect(instructionsFor([instructed(0, 'A'), instructed(1, 'B'), instructed(2, 'C')], sent)).toEqual([
      'A',
      'B',
      'C',
    ]);
    // The program's came first (B at 0, the parent's A at 1) and the child read only B.
    const after = sentTo(parentEvents([{ text: 'A', index: 1 }]));
    expect(instructionsFor([instructed(0, 'B')], after)).toEqual(['B', 'A']);
  });

  it('counts a send_instruction abandoned at its time limit as sent, without an index', () => {
    const events = parentEvents([{ text: 'A', index: 0 }]);
    events.push(
      {
        type: 'ToolCall',
        agentId: 'p',
        callId: 'late',
        name: 'send_instruction',
        args: { agentId: 'c', text: 'B' },
      } as unknown as AuditEvent,
      {
        type: 'ToolResult',
        agentId: 'p',
        callId: 'late',
        name: 'send_instruction',
        ok: false,
        text: 'send_instruction did not finish within 5 ms (its time limit): ...',
        data: { agentId: 'c', abandoned: true },
      } as unknown as AuditEvent,
    );
    const sent = sentTo(events);
    // The model was told it may still be delivered: a resumed child that never read it gets it.
    expect(sent).toEqual([{ text: 'A', index: 0 }, { text: 'B' }]);
    expect(instructionsFor([instructed(0, 'A')], sent)).toEqual(['A', 'B']);
    expect(instructionsFor([instructed(0, 'A'), instructed(1, 'B')], sent)).toEqual(['A', 'B']);
  });

  it('matches by text, once each, what a journal without indices or a cut-off call sent', () => {
    const sent = sentTo(parentEvents([{ text: 'A' }, { text: 'C' }]));
    expect(instructionsFor([instructed(0, 'A'), instructed(1, 'B')], sent)).toEqual(['A', 'B', 'C']);
    expect(instructionsFor([instructed(0, 'B'), instructed(1, 'C')], sent)).toEqual(['B', 'C', 'A']);
    // The same text twice: each read once accounts for one send.
    const twice = sentTo(parentEvents([{ text: 'go' }, { text: 'go' }]));
    expect(instructionsFor([instructed(0, 'go')], twice)).toEqual(['go', 'go']);
    expect(instructionsFor([instructed(0, 'go'), instructed(1, 'go')], twice)).toEqual(['go', 'go']);
  });

  it('delivers each of two identical instructions once across two kills, a program’s same text between', () => {
    // Session 1: the program sent `x` (index 0), the parent sent `x` (index 1); the child read
    // neither. Killed; the program's was lost with the supervisor.
    const withSeq = (events: AuditEvent[], from: number) =>
      events.map((event, i) => ({ ...event, seq: from + i }) as AuditEvent);
    const parent1 = withSeq(parentEvents([{ text: 'x', index: 1 }]), 0);
    const child1: AuditEvent[] = [];
    const sent1 = sentTo(parent1);
    const delivered1 = redeliveries(child1, sent1);
    // Resume 1 delivers the parent's at index 0 (nothing is below it), and records the move.
    expect(delivered1.map(({ text }) => text)).toEqual(['x']);
    const moved = movedInstructions(delivered1);
    expect(moved).toEqual([{ callSeq: sent1[0]?.callSeq, index: 0 }]);
    // Session 2: the child read the parent's `x` at 0, then the program's `x`, sent again, at 1; the
    // parent sent `x` again (index 2), unread when the second kill came.
    const child2 = [
      { type: 'Resumed', agentId: 'c', instructionIndices: moved },
      instructed(0, 'x'),
      instructed(1, 'x'),
    ] as AuditEvent[];
    const parent2 = [
      ...parent1,
      ...withSeq(
        parentEvents([{ text: 'x', index: 2 }])
          .slice(1)
          .map((event) => ({ ...event, callId: 't0' }) as AuditEvent),
        100,
      ),
    ];
    const sent2 = sentTo(parent2);
    expect(sent2.map(({ index }) => index)).toEqual([1, 2]);
    // Keyed at its recorded index 1, the first send took the program's `x` for its own, and the
    // text fallback then took the first `x` for the second send: it was never delivered.
    expect(instructionsFor(child2, sent2)).toEqual(['x', 'x', 'x']);
    expect(redeliveries(child2, sent2).at(-1)).toEqual({ text: 'x', callSeq: sent2[1]?.callSeq });
    // Read as well: nothing twice.
    expect(instructionsFor([...child2, instructed(2, 'x')], sent2)).toEqual(['x', 'x', 'x']);
    // A child resumed by an earlier troupe (no instructionIndices) is matched by text, as before.
    const older = [{ type: 'Resumed', agentId: 'c' }, instructed(0, 'x'), instructed(1, 'x')] as AuditEvent[];
    expect(instructionsFor(older, sent2)).toEqual(['x', 'x']);
  });
});
