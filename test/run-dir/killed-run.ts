/**
 * A fan-out run killed while both its entries ran, and a resume of its first entry only: the setup
 * of the tests of how unended attempts are counted (unended-after-resume, unended-head-only).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { journalFile, type RunDirPaths, RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import { type RunPlan, resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession, type SessionResult } from '../../src/run-dir/session.ts';
import { recordedSessions } from '../../src/run-dir/summary.ts';

/** What {@link killedRun} left. */
export interface KilledRun {
  readonly runPlan: RunPlan;
  readonly definitions: readonly AgentDefinition[];
  /** The run directory. */
  readonly root: string;
  readonly paths: RunDirPaths;
}

/**
 * Runs a plan of two entries reviewing `a.md` in `dir` (simulated model, one thread), then makes it
 * look killed while both ran: their journals stop before their ends, and neither has a line.
 */
export async function killedRun(dir: string): Promise<KilledRun> {
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
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

  for (const run of runPlan.runs) {
    const journal = journalFile(first.paths, run.agentId);
    const end = readJournal(journal).events.findIndex((e) => e.type === 'Completed');
    expect(end).toBeGreaterThan(0);
    writeFileSync(journal, `${readFileSync(journal, 'utf8').split('\n').slice(0, end).join('\n')}\n`);
  }
  writeFileSync(first.paths.results, '');
  return { runPlan, definitions, root, paths: first.paths };
}

/** A resume of `killed` that finishes its first entry only (one cut short before the second). */
export async function resumeFirstEntry(killed: KilledRun): Promise<SessionResult> {
  const { runPlan, definitions, root } = killed;
  const before = readRunDir(root);
  const [resumed] = runPlan.runs;
  if (resumed === undefined) throw new Error('no plan entry');
  return new FanoutSession({
    plan: runPlan,
    writer: RunDirWriter.reopen(root),
    work: [{ run: resumed, agentId: resumed.agentId, attempt: 1, resume: true }],
    kind: 'resume',
    existing: [],
    previousSessions: recordedSessions(before.summary, before.events),
    definitions,
  }).run();
}
