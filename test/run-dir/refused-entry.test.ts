import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_SPAWN_INPUT_BYTES } from '../../src/constants.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import type { RunEvent } from '../../src/run-dir/run-events.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { readResults, tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

describe('a plan entry the Supervisor refuses at spawn', () => {
  it('gets a failed result line saying why, not a silent "not run"', async () => {
    const huge = `Review a.md. ${'x'.repeat(MAX_SPAWN_INPUT_BYTES)}`;
    writeFileSync(
      path.join(dir, 'tasks.jsonl'),
      `${JSON.stringify({ task: 'Review a.md.' })}\n${JSON.stringify({ task: huge })}\n`,
    );
    writeFileSync(path.join(dir, 'plan.yaml'), 'cwd: .\nthreads: 1\nagent: worker\ntasks: tasks.jsonl\n');
    const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    const work = runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false }));
    const { summary } = await new FanoutSession({
      plan: runPlan,
      writer,
      work,
      kind: 'fanout',
      definitions,
    }).run();

    // Before, the refused entry had no line: counted as not run, with nothing to say why, and
    // `troupe resume` tried it again, as silently.
    expect(summary.counts).toMatchObject({ planned: 2, completed: 1, failed: 1, notRun: 0 });
    const lines = readResults(path.join(writer.paths.root, 'results.jsonl'));
    expect(lines.find((line) => line.index === 1)).toMatchObject({
      agentId: runPlan.runs[1]?.agentId,
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'spawn_input_too_large' },
    });
  });

  it('gets it when it is refused, in order with the agents before and after it', async () => {
    const huge = `Review a.md. ${'x'.repeat(MAX_SPAWN_INPUT_BYTES)}`;
    const rows = ['Review a.md.', huge, 'Review a.md again.', 'Review a.md once more.'];
    writeFileSync(
      path.join(dir, 'tasks.jsonl'),
      rows.map((task) => `${JSON.stringify({ task })}\n`).join(''),
    );
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      'cwd: .\nthreads: 1\nconcurrency: 1\nagent: worker\ntasks: tasks.jsonl\n',
    );
    const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    const work = runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false }));
    const ended: (number | null)[] = [];
    const onEvent = (event: RunEvent): void => {
      if (event.type === 'ended') ended.push(event.line.index);
    };
    const { summary } = await new FanoutSession({
      plan: runPlan,
      writer,
      work,
      kind: 'fanout',
      definitions,
      onEvent,
    }).run();

    expect(summary.counts).toMatchObject({ planned: 4, completed: 3, failed: 1, notRun: 0 });
    // One at a time, so the row refused at spawn ends between the agents before and after it.
    // Before, its line (and its progress event) came after every other agent had ended.
    expect(ended).toEqual([0, 1, 2, 3]);
    const lines = readResults(path.join(writer.paths.root, 'results.jsonl'));
    expect(lines.map((line) => [line.index, line.status])).toEqual([
      [0, 'completed'],
      [1, 'failed'],
      [2, 'completed'],
      [3, 'completed'],
    ]);
  });
});
