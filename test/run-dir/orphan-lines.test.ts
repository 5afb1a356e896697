/**
 * `troupe resume` of a run killed while an agent spawned by an agent was still running under a
 * parent that had ended (or that ran again): every agent of the run ends with exactly one result
 * line. An orphan (its parent ended, at any depth) is ended `Failed(cancelled)` in its journal, which
 * still verifies, and gets that line; one whose parent runs again is adopted and finishes. The kill
 * is made exact by cutting a finished run's journals and lines.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { AuditEvent, AuditEventInput } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { captureIO, readResults, tempDir } from './helpers.ts';

const provider = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/supervisor/adoption-provider.ts',
);

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-orphan-line-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'orchestrator.md'),
    '---\nname: orchestrator\ndescription: Splits work.\ntools: [spawn_agent, send_instruction, await_agents, complete_task]\n---\nSplit the work.\n',
  );
});
afterEach(() => cleanup());

async function finishedRun() {
  const plan = path.join(dir, 'plan.yaml');
  writeFileSync(
    plan,
    [
      'agent: orchestrator',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      `provider: { module: ${JSON.stringify(provider)} }`,
      'runs:',
      '  - { id: split, task: "Split the work between two workers." }',
      '',
    ].join('\n'),
  );
  const out = path.join(dir, 'run');
  await main(['fanout', plan, '--out', out, '--json'], captureIO());
  const resultsFile = path.join(out, 'results.jsonl');
  const before = readResults(resultsFile);
  const parent = before.find((line) => line.index === 0);
  const [first, second] = before.filter((line) => line.index === null);
  if (parent === undefined || first === undefined || second === undefined) throw new Error('no agents');
  return { out, resultsFile, before, parent, first, second };
}

const journalOf = (out: string, agentId: string): string => path.join(out, 'journals', `${agentId}.jsonl`);

/** Cuts `journal` just before its Completed or Failed event, as a kill while it ran leaves it. */
function cutBeforeEnd(journal: string): void {
  const lines = readFileSync(journal, 'utf8').split('\n');
  const end = readJournal(journal).events.findIndex((e) => e.type === 'Completed' || e.type === 'Failed');
  expect(end).toBeGreaterThan(0);
  writeFileSync(journal, `${lines.slice(0, end).join('\n')}\n`);
}

function dropLines(resultsFile: string, agentIds: readonly string[]): void {
  const text = readFileSync(resultsFile, 'utf8').split('\n');
  writeFileSync(
    resultsFile,
    text.filter((line) => !agentIds.some((id) => line.includes(`"agentId":"${id}"`))).join('\n'),
  );
}

/**
 * Writes, as agent `agentId` spawned by `parentId`, the events of `from` (a worker's journal), its
 * Started with `started` added.
 */
function copyAs(
  from: string,
  to: string,
  agentId: string,
  parentId: string,
  withEnd: boolean,
  started: Record<string, unknown> = {},
): void {
  const writer = JournalWriter.open(to);
  for (const event of readJournal(from).events) {
    if (!withEnd && (event.type === 'Completed' || event.type === 'Failed')) break;
    const { seq: _seq, prev: _prev, hash: _hash, ...body } = event as AuditEvent & Record<string, unknown>;
    const input = { ...body, agentId, ...(event.type === 'Started' ? { parentId, ...started } : {}) };
    writer.append(input as unknown as AuditEventInput);
  }
  writer.close();
}

function expectOrphanLine(
  out: string,
  after: ReturnType<typeof readResults>,
  agentId: string,
  parentId: string,
) {
  expect(after.filter((line) => line.agentId === agentId)).toEqual([
    expect.objectContaining({
      index: null,
      parentId,
      status: 'failed',
      reason: 'cancelled',
      error: expect.objectContaining({ code: 'cancelled', fields: expect.objectContaining({ parentId }) }),
      recoveredFrom: 'journal',
    }),
  ]);
  const journal = journalOf(out, agentId);
  expect(readJournal(journal).events.at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
  expect(verifyJournalFile(journal).ok).toBe(true);
}

describe('troupe resume of a run killed while a nested agent ran', () => {
  it('ends a child whose parent had finished with one failed line, its journal’s totals in it', async () => {
    const { out, resultsFile, before, parent, second } = await finishedRun();
    cutBeforeEnd(journalOf(out, second.agentId));
    dropLines(resultsFile, [second.agentId]);

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    expectOrphanLine(out, after, second.agentId, parent.agentId);
    // What its journal recorded (the request it made) counts.
    expect(after.find((line) => line.agentId === second.agentId)?.usage).toEqual(second.usage);
    expect(after).toHaveLength(before.length);

    await main(['resume', out, '--json'], captureIO());
    expect(readResults(resultsFile)).toHaveLength(before.length);
    expect(
      readJournal(journalOf(out, second.agentId)).events.filter((e) => e.type === 'Failed'),
    ).toHaveLength(1);
  });

  it('follows the whole tree: a grandchild under a finished child is ended or recovered', async () => {
    const { out, resultsFile, before, first, second } = await finishedRun();
    // Two grandchildren of the first (finished) child: one still running, one ended without a line.
    const running = `${first.agentId}-g1`;
    const ended = `${first.agentId}-g2`;
    copyAs(journalOf(out, second.agentId), journalOf(out, running), running, first.agentId, false);
    copyAs(journalOf(out, second.agentId), journalOf(out, ended), ended, first.agentId, true);

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    expectOrphanLine(out, after, running, first.agentId);
    expect(after.filter((line) => line.agentId === ended)).toEqual([
      expect.objectContaining({
        index: null,
        parentId: first.agentId,
        status: 'completed',
        recoveredFrom: 'journal',
      }),
    ]);
    expect(after).toHaveLength(before.length + 2);
  });

  it('leaves a child whose parent runs again to be adopted: it finishes, not cancelled', async () => {
    const { out, resultsFile, before, parent, second } = await finishedRun();
    const journal = journalOf(out, parent.agentId);
    const lines = readFileSync(journal, 'utf8').split('\n');
    const at = readJournal(journal).events.findIndex(
      (e) => e.type === 'ToolCall' && e.name === 'await_agents',
    );
    writeFileSync(journal, `${lines.slice(0, at + 1).join('\n')}\n`);
    cutBeforeEnd(journalOf(out, second.agentId));
    dropLines(resultsFile, [second.agentId, parent.agentId]);

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    expect(after.filter((line) => line.agentId === second.agentId)).toEqual([
      expect.objectContaining({ status: 'completed' }),
    ]);
    expect(after.filter((line) => line.agentId === parent.agentId)).toEqual([
      expect.objectContaining({ status: 'completed' }),
    ]);
    expect(after).toHaveLength(before.length);
  });

  it('ends a child of a parent that runs again when the parent will not adopt it', async () => {
    const { out, resultsFile, before, parent, second } = await finishedRun();
    const journal = journalOf(out, parent.agentId);
    const lines = readFileSync(journal, 'utf8').split('\n');
    const at = readJournal(journal).events.findIndex(
      (e) => e.type === 'ToolCall' && e.name === 'await_agents',
    );
    writeFileSync(journal, `${lines.slice(0, at + 1).join('\n')}\n`);
    dropLines(resultsFile, [parent.agentId]);
    // A child of the parent that no spawn_agent result or cut-off call of its journal accounts for
    // (its call came back interrupted in an earlier resume that did not find it): nothing awaits it.
    const stray = `${parent.agentId}-stray`;
    copyAs(journalOf(out, second.agentId), journalOf(out, stray), stray, parent.agentId, false, {
      spawnCallId: 'a-call-with-a-result',
    });

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    // Without the fix it was left to an adoption that never took it: no line, its journal open.
    expectOrphanLine(out, after, stray, parent.agentId);
    expect(after.filter((line) => line.agentId === parent.agentId)).toEqual([
      expect.objectContaining({ status: 'completed' }),
    ]);
    expect(after).toHaveLength(before.length + 1);
  });

  it('finds a nested agent whose Started line is over 1 MiB', async () => {
    const { out, resultsFile, before, first, second } = await finishedRun();
    const big = `${first.agentId}-big`;
    // Its metadata is sorted before parentId in the line: the parent lies 1.5 MiB in.
    copyAs(journalOf(out, second.agentId), journalOf(out, big), big, first.agentId, false, {
      metadata: { blob: 'm'.repeat(1536 * 1024) },
    });

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    // Without the fix its first line was skipped as too long: no line, its journal never ended.
    expectOrphanLine(out, after, big, first.agentId);
    expect(after).toHaveLength(before.length + 1);
  });
});
