/** `troupe score --plan` matches a repeated id the n-th with the n-th, as `troupe compare` does. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import { captureIO, readResults, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-score-ids-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  writeFileSync(path.join(dir, 'b.md'), '# B\nBeta.\n');
});
afterEach(() => cleanup());

describe('troupe score --plan with an id that repeats', () => {
  it('gives each repeat the expected value of the item at the same repeat', async () => {
    const planFile = path.join(dir, 'plan.yaml');
    writeFileSync(
      planFile,
      [
        'agent: worker',
        `cwd: ${JSON.stringify(dir)}`,
        'threads: 1',
        'runs:',
        '  - { id: same, task: Review a.md, expected: a.md }',
        '  - { id: same, task: Review b.md, expected: b.md }',
        'scorers:',
        '  - { name: mentions, type: contains, path: $.summary }',
        '',
      ].join('\n'),
    );
    const runDir = path.join(dir, 'run');
    expect(await main(['fanout', planFile, '--out', runDir, '--json'], captureIO())).toBe(0);
    const passed = () =>
      readResults(path.join(runDir, 'results.jsonl'))
        .sort((x, y) => (x.index ?? 0) - (y.index ?? 0))
        .map((line) => line.scores?.mentions?.pass);
    expect(passed()).toEqual([true, true]);

    // Scoring again with the very plan it ran must not change a thing.
    expect(await main(['score', runDir, '--plan', planFile], captureIO())).toBe(0);
    const plan = JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')) as RunPlan;
    expect(plan.runs.map((run) => [run.label, run.expected])).toEqual([
      ['same', 'a.md'],
      ['same', 'b.md'],
    ]);
    expect(passed()).toEqual([true, true]);
  });
});
