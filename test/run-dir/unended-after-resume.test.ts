/**
 * An agent an earlier session left unended (a kill while it ran) and a resume did not finish is
 * counted interrupted in the summary that resume writes, as `troupe score` (unendedAttempts) and
 * `troupe report` (the timeline) count it. Before, the session counted only the agents it tracked
 * itself: such an entry was "not run" in summary.json and "interrupted" once recounted.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { journalFile, RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { type RunSummary, recordedSessions, summarize } from '../../src/run-dir/summary.ts';
import { buildTimeline, unendedAttempts, unendedOf } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-resume-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

describe('a resume of a subset after a kill', () => {
  it('counts the entry it left unended as interrupted, as troupe score and troupe report do', async () => {
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

    // A resume that finishes the first entry only (one cut short before it reached the second).
    const killed = readRunDir(root);
    const [resumed] = runPlan.runs;
    if (resumed === undefined) throw new Error('no plan entry');
    const { summary } = await new FanoutSession({
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
    expect(summary.counts).toEqual(written.counts);
    // What `troupe score` writes and `troupe report` shows of the same directory.
    const contents = readRunDir(root);
    const unended = unendedAttempts(contents);
    expect(unended).toEqual(unendedOf(buildTimeline(contents)));
    const recounted = summarize(contents.plan, contents.results, [], new Date(), undefined, unended);
    expect(recounted.counts).toEqual(written.counts);
  });
});
