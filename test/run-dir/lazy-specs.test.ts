import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import type { RunEvent } from '../../src/run-dir/run-events.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession, type WorkItem } from '../../src/run-dir/session.ts';
import { readResults, tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

describe('a fan-out session over a data set', () => {
  it('builds each spawn spec when a slot frees, not every one before the first agent starts', async () => {
    const entries = 40;
    const file = path.join(dir, 'plan.yaml');
    writeFileSync(
      file,
      [
        'cwd: .',
        'threads: 1',
        'concurrency: 3',
        'agent: worker',
        'runs:',
        ...Array.from({ length: entries }, (_, index) => `  - task: Review a.md (item ${index}).`),
        '',
      ].join('\n'),
    );
    const { plan, definitions } = await loadPlan(file);
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    // A work item counts when its plan entry is read: that is when its spec is built.
    const read = new Set<number>();
    const work: WorkItem[] = runPlan.runs.map((run) => ({
      get run() {
        read.add(run.index);
        return run;
      },
      agentId: run.agentId,
      attempt: 1,
      resume: false,
    }));
    let readAtFirstStart: number | undefined;
    const spawned: (number | null)[] = [];
    const onEvent = (event: RunEvent): void => {
      if (event.type === 'started') readAtFirstStart ??= read.size;
      if (event.type === 'spawned') spawned.push(event.index);
    };
    const session = new FanoutSession({ plan: runPlan, writer, work, kind: 'fanout', definitions, onEvent });
    const { summary } = await session.run();

    // Before, all 40 specs (and their tracking entries) were built before any agent ran: 20,000 of
    // them for a 20,000-row data set.
    expect(readAtFirstStart).toBe(runPlan.concurrency);
    expect(read.size).toBe(entries);
    expect(spawned).toEqual(Array.from({ length: entries }, (_, index) => index));
    expect(summary.counts).toMatchObject({ planned: entries, completed: entries, notRun: 0 });
    const lines = readResults(path.join(writer.paths.root, 'results.jsonl'));
    expect(lines.map((line) => line.index).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
      Array.from({ length: entries }, (_, index) => index),
    );
  });
});
