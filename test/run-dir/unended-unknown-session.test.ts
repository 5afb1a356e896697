/**
 * `counts.nested.unknown` through a whole session and `troupe resume RUN_DIR`: a journal without a
 * result line whose ids lie past what the unended count reads of its first line (64 MiB; a small
 * `unendedBounds.maxHeadBytes` here) is counted there, the session names it, and `troupe resume`
 * says so on stderr (it printed nothing of it before).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resumeRunDir } from '../../src/cli/fanout-resume.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { journalFile, RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { captureIO, tempDir } from './helpers.ts';

/** A small bound for the test, standing in for MAX_STARTED_HEAD_BYTES (64 MiB). */
const HEAD_BYTES = 16 * 1024;
const unendedBounds = { maxHeadBytes: HEAD_BYTES };

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-session-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

/** A child's `Started` head whose context (sorted before `parentId`) is longer than the bound. */
function childJournal(agentId: string, parentId: string): string {
  return `${JSON.stringify({ agentId, context: ['x'.repeat(2 * HEAD_BYTES)], parentId, type: 'Started' })}\n`;
}

async function plannedRun() {
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    'cwd: .\nthreads: 1\nagent: worker\nruns:\n  - task: Review a.md.\n',
  );
  const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  const root = path.join(dir, 'run');
  const writer = RunDirWriter.create(root, runPlan);
  const [entry] = runPlan.runs;
  if (entry === undefined) throw new Error('no plan entry');
  const work = [{ run: entry, agentId: entry.agentId, attempt: 1, resume: false }];
  return { root, runPlan, writer, work, definitions, parentId: entry.agentId };
}

describe('counts.nested.unknown', () => {
  it('is counted by a whole session, which names the journal', async () => {
    const { runPlan, writer, work, definitions, parentId } = await plannedRun();
    writeFileSync(journalFile(writer.paths, 'child'), childJournal('child', parentId));

    const result = await new FanoutSession({
      plan: runPlan,
      writer,
      work,
      kind: 'fanout',
      definitions,
      unendedBounds,
    }).run();

    expect(result.summary.counts).toMatchObject({ completed: 1, nested: { unknown: 1 } });
    expect(result.unknownJournals).toEqual(['child.jsonl']);
  });

  it('is named in a warning line by troupe resume', async () => {
    const { root, runPlan, writer, work, definitions } = await plannedRun();
    await new FanoutSession({ plan: runPlan, writer, work, kind: 'fanout', definitions }).run();
    // A journal no resume reads for its parent (its ids lie past the bound): say so, do not drop it.
    writeFileSync(journalFile(writer.paths, 'stray'), childJournal('stray', 'another-run-0'));

    const io = captureIO();
    expect(await resumeRunDir(root, { unendedBounds }, io)).toBe(0);

    const warnings = io
      .err()
      .split('\n')
      .filter((line) => line.startsWith('warning:'));
    // Without the fix: no line at all, though summary.json counted it.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('warning: 1 journal(s) without a result line');
    expect(warnings[0]).toContain('stray.jsonl');
    expect(warnings[0]).toContain('counts.nested.unknown');
  });
});
