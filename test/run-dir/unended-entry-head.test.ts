/**
 * The unended count (`unendedAttempts`, at each session's start and end and in `troupe score`)
 * counts a plan entry's current attempt without a line as interrupted when its journal starts with
 * `Started`, reading at most `maxHeadBytes` (MAX_STARTED_HEAD_BYTES, 64 MiB) of that line. An
 * entry whose `Started` line is longer (a fan-out item with a huge context, killed mid-run) was not
 * counted: summary.json said "notRun" of an agent that ran. A whole longer first line now counts as
 * started; one cut off while written (no newline) does not, as a short torn one does not.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { journalFile, RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { summarize } from '../../src/run-dir/summary.ts';
import { unendedAttempts } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';

/** A small bound for the test, standing in for MAX_STARTED_HEAD_BYTES (64 MiB). */
const HEAD_BYTES = 16 * 1024;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-entry-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

/** A planned one-entry run nothing has finished: its directory, plan and entry's agent id. */
async function plannedRun() {
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    'cwd: .\nthreads: 1\nagent: worker\nruns:\n  - task: Review a.md.\n',
  );
  const { plan } = await loadPlan(path.join(dir, 'plan.yaml'));
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  const root = path.join(dir, 'run');
  const writer = RunDirWriter.create(root, runPlan);
  const [entry] = runPlan.runs;
  if (entry === undefined) throw new Error('no plan entry');
  return { root, runPlan, journal: journalFile(writer.paths, entry.agentId), agentId: entry.agentId };
}

/** The entry's `Started` line with a context of `contextBytes` (members in canonical order). */
function startedLine(agentId: string, contextBytes: number): string {
  return JSON.stringify({ agentId, context: ['x'.repeat(contextBytes)], type: 'Started' });
}

describe('the unended count, for a plan entry whose Started line is longer than the head it reads', () => {
  it('counts the entry as interrupted, not as not run', async () => {
    const { root, runPlan, journal, agentId } = await plannedRun();
    writeFileSync(journal, `${startedLine(agentId, 2 * HEAD_BYTES)}\n{"type":"Resumed"}\n`);

    const unended = unendedAttempts(readRunDir(root), { maxHeadBytes: HEAD_BYTES });

    // Without the fix: { entries: {}, nested: 0 }, and summary.json said notRun: 1.
    expect(unended).toEqual({ entries: new Set([0]), nested: 0 });
    const summary = summarize(runPlan, readRunDir(root).results, [], new Date(), undefined, unended);
    expect(summary.counts).toMatchObject({ planned: 1, interrupted: 1, notRun: 0 });
  });

  it('does not count one whose long first line was cut off while written', async () => {
    const { root, journal, agentId } = await plannedRun();
    writeFileSync(journal, startedLine(agentId, 2 * HEAD_BYTES));

    expect(unendedAttempts(readRunDir(root), { maxHeadBytes: HEAD_BYTES })).toEqual({
      entries: new Set(),
      nested: 0,
    });
  });
});
