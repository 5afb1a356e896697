/**
 * `troupe resume RUN_DIR --retry-failed` of an entry whose last attempt was itself a retry: the
 * third attempt's adoption searches under every attempt its journal continues (`Started.forkedFrom`
 * of the second, src/journal/fork.ts), so an unfinished child naming the first attempt is left to
 * it, not ended as an orphan of an attempt that does not run (it may be the child of a spawn_agent
 * call the first attempt ended before answering, copied cut off into each fork).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import type { ResumeLine } from '../../src/run-dir/result-store.ts';
import { planResume } from '../../src/run-dir/resume-plan.ts';
import { journalFile, RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-resume-origins-'));
});
afterEach(() => cleanup());

/** A journal holding only a `Started` event (an agent that had started and done nothing more). */
function startedJournal(file: string, started: Record<string, unknown>): void {
  const writer = JournalWriter.open(file);
  writer.append({
    type: 'Started',
    definition: { name: 'worker', hash: 'h' },
    task: 'work',
    context: [],
    metadata: {},
    provider: 'simulated',
    model: 'simulated',
    contextWindow: 1000,
    maxInputTokens: 1000,
    systemPrompt: '',
    toolSpecs: [],
    format: 3,
    ...started,
  } as unknown as AuditEventInput);
  writer.close();
}

describe('a retry of a retry planned by troupe resume', () => {
  it("leaves the first attempt's unfinished child to the retry, not to the orphans", async () => {
    writeFileSync(path.join(dir, 'plan.yaml'), 'cwd: .\nthreads: 1\nagent: worker\nruns:\n  - task: work\n');
    const { plan } = await loadPlan(path.join(dir, 'plan.yaml'));
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const { paths } = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    const [run] = runPlan.runs;
    if (run === undefined) throw new Error('no plan entry');
    const firstId = run.agentId;
    const secondId = `${firstId}-r2`;
    startedJournal(journalFile(paths, firstId), { agentId: firstId });
    startedJournal(journalFile(paths, secondId), { agentId: secondId, forkedFrom: [firstId] });
    startedJournal(journalFile(paths, 'child'), { agentId: 'child', parentId: firstId, spawnCallId: 'c1' });
    const lines: ResumeLine[] = [
      { index: 0, agentId: firstId, attempt: 1, status: 'failed', reason: 'provider_error' },
      { index: 0, agentId: secondId, attempt: 2, status: 'failed', reason: 'provider_error' },
    ];

    const planned = planResume(runPlan, paths, lines, { retry: new Set(['provider_error']) });

    expect(planned.work).toMatchObject([{ agentId: `${firstId}-r3`, attempt: 3, retryOf: secondId }]);
    // Without the fix only the second attempt's children were left to the retry: this one was
    // ended as an orphan before the retry could find it.
    expect(planned.orphans).toEqual([]);
  });
});
