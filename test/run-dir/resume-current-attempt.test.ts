/**
 * `troupe resume RUN_DIR` without `--retry-failed` after a `--retry-failed` session was killed
 * mid-retry: the entry's last result line is the old failure (final), but its current attempt is the
 * newest journal (`-r2`), which it finishes, or whose outcome it takes when that journal ended.
 * The kill is made exact by cutting a finished retry's journal and line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { planResume } from '../../src/run-dir/resume-plan.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { readResults, tempDir } from './helpers.ts';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/supervisor');

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-resume-current-'));
});
afterEach(() => cleanup());

/** A run whose one entry failed (step_limit) and was retried to completion as `-r2` (unless `retry` is false). */
async function retriedRun(retry = true) {
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    [
      'cwd: .',
      'threads: 1',
      'provider:',
      `  module: ${path.join(fixtures, 'counted-provider.ts')}`,
      'providerOptions:',
      `  log: ${path.join(dir, 'requests.log')}`,
      'toolModules:',
      `  - { module: ${path.join(fixtures, 'fault-tools.ts')}, export: faultTools }`,
      'limits: { maxSteps: 2 }',
      'runs:',
      '  - { agent: worker, task: "call nap" }',
    ].join('\n'),
  );
  const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
  const provider = chooseProvider({ plan: plan.provider, options: plan.providerOptions, env: {} });
  const { limits: _limits, ...runPlan } = resolveRunPlan(plan, provider, {}, 'counted');
  const writer = RunDirWriter.create(path.join(dir, 'run'), { ...runPlan, limits: { maxSteps: 2 } });
  const [run] = runPlan.runs;
  if (run === undefined) throw new Error('the plan has no run');
  await new FanoutSession({
    plan: { ...runPlan, limits: { maxSteps: 2 } },
    writer,
    work: [{ run, agentId: run.agentId, attempt: 1, resume: false }],
    kind: 'fanout',
    definitions,
  }).run();
  const retryJournal = path.join(writer.paths.journals, `${run.agentId}-r2.jsonl`);
  if (!retry) return { runPlan, writer, run, definitions, lines: [], retryJournal };
  await new FanoutSession({
    plan: runPlan,
    writer,
    work: [{ run, agentId: `${run.agentId}-r2`, attempt: 2, resume: false, retryOf: run.agentId }],
    kind: 'resume',
    definitions,
    existing: readResults(writer.paths.results),
  }).run();
  const lines = readResults(writer.paths.results);
  expect(lines.map((line) => [line.agentId, line.status])).toEqual([
    [run.agentId, 'failed'],
    [`${run.agentId}-r2`, 'completed'],
  ]);
  return { runPlan, writer, run, definitions, lines, retryJournal };
}

/** Keeps only the first line of `results.jsonl`: the retry's line was never written. */
function dropRetryLine(resultsFile: string): void {
  const [first] = readFileSync(resultsFile, 'utf8').split('\n');
  writeFileSync(resultsFile, `${first}\n`);
}

describe('troupe resume (no --retry-failed) of a run killed mid-retry', () => {
  it('resumes the retry’s unfinished journal instead of keeping the failure it retried', async () => {
    const { runPlan, writer, run, definitions, lines, retryJournal } = await retriedRun();
    // Killed before the retry ended: its journal stops before Completed, and it has no line.
    const text = readFileSync(retryJournal, 'utf8').split('\n');
    const end = readJournal(retryJournal).events.findIndex((event) => event.type === 'Completed');
    expect(end).toBeGreaterThan(0);
    writeFileSync(retryJournal, `${text.slice(0, end).join('\n')}\n`);
    dropRetryLine(writer.paths.results);

    const decision = planResume(runPlan, writer.paths, readResults(writer.paths.results));
    expect(decision.kept).toBe(0);
    expect(decision.work).toEqual([
      expect.objectContaining({
        agentId: `${run.agentId}-r2`,
        attempt: 2,
        resume: true,
        retryOf: run.agentId,
      }),
    ]);
    await new FanoutSession({
      plan: runPlan,
      writer,
      work: decision.work,
      kind: 'resume',
      definitions,
      existing: readResults(writer.paths.results),
    }).run();
    const after = readResults(writer.paths.results);
    expect(after.map((line) => [line.agentId, line.status])).toEqual([
      [run.agentId, 'failed'],
      [`${run.agentId}-r2`, 'completed'],
    ]);
    // It continued the fork: what it inherited is the failed attempt's, as before the kill.
    expect(after[1]?.inherited).toEqual(lines[1]?.inherited);
  });

  it('takes the retry’s outcome from its journal when only its line was cut off', async () => {
    const { runPlan, writer, run, lines } = await retriedRun();
    dropRetryLine(writer.paths.results);
    const decision = planResume(runPlan, writer.paths, readResults(writer.paths.results));
    expect(decision.work).toEqual([]);
    expect(decision.recovered).toEqual([
      expect.objectContaining({
        index: 0,
        agentId: `${run.agentId}-r2`,
        attempt: 2,
        status: 'completed',
        recoveredFrom: 'journal',
        inherited: lines[1]?.inherited,
      }),
    ]);
  });

  it('runs a retry whose journal holds nothing yet as a retry: a fork of the failed attempt', async () => {
    const { runPlan, writer, run, retryJournal } = await retriedRun(false);
    writeFileSync(retryJournal, '');
    const decision = planResume(runPlan, writer.paths, readResults(writer.paths.results));
    expect(decision.work).toEqual([
      expect.objectContaining({
        agentId: `${run.agentId}-r2`,
        attempt: 2,
        resume: false,
        retryOf: run.agentId,
      }),
    ]);
  });
});

describe('troupe resume of a run whose retry a Ctrl-C cancelled', () => {
  it('retries the failed attempt again, as a cancelled first attempt starts again, not from scratch', async () => {
    const { runPlan, writer, run, definitions, lines } = await retriedRun();
    // What a first Ctrl-C during the retry writes: its line says Failed(cancelled).
    const [first, second] = readFileSync(writer.paths.results, 'utf8').split('\n');
    const {
      result: _result,
      answer: _answer,
      ...retry
    } = JSON.parse(second ?? '{}') as Record<string, unknown>;
    const cancelled = {
      ...retry,
      status: 'failed',
      reason: 'cancelled',
      error: { code: 'cancelled', message: 'cancelled by the user' },
    };
    writeFileSync(writer.paths.results, `${first}\n${JSON.stringify(cancelled)}\n`);

    const decision = planResume(runPlan, writer.paths, readResults(writer.paths.results));
    // Without the fix `-r3` started afresh: the failed attempt's finished work ran again.
    expect(decision.work).toEqual([
      expect.objectContaining({
        agentId: `${run.agentId}-r3`,
        attempt: 3,
        resume: false,
        retryOf: run.agentId,
      }),
    ]);
    await new FanoutSession({
      plan: runPlan,
      writer,
      work: decision.work,
      kind: 'resume',
      definitions,
      existing: readResults(writer.paths.results),
    }).run();
    const after = readResults(writer.paths.results);
    expect(after.map((line) => [line.agentId, line.status])).toEqual([
      [run.agentId, 'failed'],
      [`${run.agentId}-r2`, 'failed'],
      [`${run.agentId}-r3`, 'completed'],
    ]);
    // A fork of the failed attempt, as the cancelled retry was.
    expect(after[2]?.inherited).toEqual(lines[1]?.inherited);
    expect(after[2]?.inherited).toBeDefined();
  });
});
