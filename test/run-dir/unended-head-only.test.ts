/**
 * The count of unended attempts (`unendedAttemptIds`, at each session's start and end and in
 * `troupe score`) reads each unended journal's first line only. Before, it read every such journal
 * whole to look at its first event: a resume over many long unended journals read them all twice,
 * and one past what a buffer holds threw `journal_io`, which the session swallowed, dropping every
 * unended entry it had found: they were "not run" in summary.json, "interrupted" once recounted.
 * The long journal here is a sparse file (its tail is holes, no disk is written) past 2 GiB, which
 * `readFileSync` refuses to read whole.
 */
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { journalFile, RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { type RunSummary, recordedSessions } from '../../src/run-dir/summary.ts';
import { unendedAttempts } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';

/** Past the 2 GiB `readFileSync` reads whole (`ERR_FS_FILE_TOO_LARGE`). */
const HUGE = 3 * 1024 * 1024 * 1024;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-head-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

describe('the unended count', () => {
  it('reads only the head of an unended journal, however long the journal', async () => {
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      'cwd: .\nthreads: 1\nagent: worker\nruns:\n  - task: Review a.md.\n  - task: Review a.md again.\n',
    );
    const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const root = path.join(dir, 'run');
    const first = RunDirWriter.create(root, runPlan);
    const work = runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false }));
    await new FanoutSession({ plan: runPlan, writer: first, work, kind: 'fanout', definitions }).run();

    // A kill while both ran: their journals stop before their ends, and neither has a line.
    for (const run of runPlan.runs) {
      const journal = journalFile(first.paths, run.agentId);
      const end = readJournal(journal).events.findIndex((e) => e.type === 'Completed');
      expect(end).toBeGreaterThan(0);
      writeFileSync(journal, `${readFileSync(journal, 'utf8').split('\n').slice(0, end).join('\n')}\n`);
    }
    writeFileSync(first.paths.results, '');
    // The second's journal goes on far past its first line (only the head is its business here).
    const [resumed, long] = runPlan.runs;
    if (resumed === undefined || long === undefined) throw new Error('no plan entries');
    truncateSync(journalFile(first.paths, long.agentId), HUGE);

    expect(unendedAttempts(readRunDir(root))).toEqual({ entries: new Set([0, 1]), nested: 0 });

    // A resume that finishes the first entry only counts the second interrupted, not "not run".
    const killed = readRunDir(root);
    await new FanoutSession({
      plan: runPlan,
      writer: RunDirWriter.reopen(root),
      work: [{ run: resumed, agentId: resumed.agentId, attempt: 1, resume: true }],
      kind: 'resume',
      existing: [],
      previousSessions: recordedSessions(killed.summary, killed.events),
      definitions,
    }).run();
    const written = JSON.parse(readFileSync(first.paths.summary, 'utf8')) as RunSummary;
    expect(written.counts).toMatchObject({ completed: 1, interrupted: 1, notRun: 0 });
  });
});
