/**
 * The unended count (`unendedAttempts`, at each session's start and end and in `troupe score`)
 * finds a run's nested agents without a line by the parent the head of their journal's first line
 * names. One whose ids lie past what it reads of that line (`maxHeadBytes`, MAX_STARTED_HEAD_BYTES
 * by default: a child spawned with a huge context) may be such an agent: it is counted as
 * `unknown` (`counts.nested.unknown` in summary.json), not dropped silently as it was.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { journalFile, RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { summarize } from '../../src/run-dir/summary.ts';
import { unendedAttempts } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';

/** A small bound for the test, standing in for MAX_STARTED_HEAD_BYTES (64 MiB). */
const HEAD_BYTES = 16 * 1024;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-unknown-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

/** A finished one-entry run: its directory, and its entry's agent id. */
async function finishedRun() {
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    'cwd: .\nthreads: 1\nagent: worker\nruns:\n  - task: Review a.md.\n',
  );
  const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  const root = path.join(dir, 'run');
  const writer = RunDirWriter.create(root, runPlan);
  const work = runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false }));
  await new FanoutSession({ plan: runPlan, writer, work, kind: 'fanout', definitions }).run();
  const [entry] = runPlan.runs;
  if (entry === undefined) throw new Error('no plan entry');
  return { root, runPlan, paths: writer.paths, parentId: entry.agentId };
}

/**
 * The head of a child's `Started` line, its members sorted as canonical JSON sorts them: a context
 * of `contextBytes` comes before `parentId`. Only the head is read by the count.
 */
function childJournal(parentId: string, contextBytes: number): string {
  return `${JSON.stringify({ agentId: 'child', context: ['x'.repeat(contextBytes)], parentId, type: 'Started' })}\n`;
}

describe('the unended count, beside a journal whose ids lie past the head it reads', () => {
  it('counts it as unknown, not as nothing', async () => {
    const { root, runPlan, paths, parentId } = await finishedRun();
    writeFileSync(journalFile(paths, 'child'), childJournal(parentId, 2 * HEAD_BYTES));

    const unended = unendedAttempts(readRunDir(root), { maxHeadBytes: HEAD_BYTES });

    // Without the fix the journal was skipped: { entries: {}, nested: 0 }, as if it were not there.
    expect(unended).toEqual({ entries: new Set(), nested: 0, unknown: 1 });
    const summary = summarize(runPlan, readRunDir(root).results, [], new Date(), undefined, unended);
    expect(summary.counts.nested).toEqual({ completed: 0, failed: 0, interrupted: 0, unknown: 1 });
  });

  it('counts the same child within the head as interrupted, and says nothing of unknown', async () => {
    const { root, runPlan, paths, parentId } = await finishedRun();
    writeFileSync(journalFile(paths, 'child'), childJournal(parentId, HEAD_BYTES / 2));

    const unended = unendedAttempts(readRunDir(root), { maxHeadBytes: HEAD_BYTES });

    expect(unended).toEqual({ entries: new Set(), nested: 1 });
    const summary = summarize(runPlan, readRunDir(root).results, [], new Date(), undefined, unended);
    expect(summary.counts.nested).toEqual({ completed: 0, failed: 0, interrupted: 1 });
  });
});
