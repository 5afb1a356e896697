/**
 * `troupe compare A B --gate S` over two runs with no item in common: the error says what each
 * run's items are keyed by (how many have an id, the first ids) and why none matched, not only the
 * matching rule.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { compareRunDirs } from '../../src/compare/compare.ts';
import { checkGates, parseGate } from '../../src/compare/gate.ts';
import { captureIO, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;

/** A fanned-out run of `runs` (YAML plan entries) with the `mentions` scorer. */
async function fanout(name: string, runs: readonly string[]): Promise<string> {
  const plan = path.join(dir, `${name}.yaml`);
  writeFileSync(
    plan,
    [
      'agent: worker',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      'runs:',
      ...runs.map((run) => `  - ${run}`),
      'scorers:',
      '  - { name: mentions, type: contains, path: $.summary }',
      '',
    ].join('\n'),
  );
  const out = path.join(dir, `run-${name}`);
  const io = captureIO();
  const code = await main(['fanout', plan, '--out', out, '--json'], io);
  if (code !== 0) throw new Error(`fanout ${name} exited ${code}: ${io.err()}`);
  return out;
}

let runA: string;
let runB: string;
beforeAll(async () => {
  ({ dir, cleanup } = tempDir('troupe-compare-keys-'));
  writeFileSync(path.join(dir, 'a.md'), '# a\n');
  // A gives an id to its first item only; B gives ids to both, none of them A's.
  runA = await fanout('a', [
    '{ id: x, task: Review a.md, expected: a.md }',
    '{ task: Review a.md, expected: a.md }',
  ]);
  runB = await fanout('b', [
    '{ id: t1, task: Review a.md, expected: a.md }',
    '{ id: t2, task: Review a.md, expected: a.md }',
  ]);
});
afterAll(() => cleanup());

describe('troupe compare --gate with no item in common', () => {
  it("says what each run's items are keyed by, why none matched and what to do", async () => {
    const io = captureIO();
    expect(await main(['compare', runA, runB, '--gate', 'mentions'], io)).toBe(1);
    const message = io.err();
    expect(message).toContain('run A: 2 items, 1 with an id ("x")');
    expect(message).toContain('run B: 2 items, ids "t1", "t2"');
    expect(message).toContain('no id is in both runs');
    expect(message).toContain('run B has no item without an id to match by position');
    expect(message).toContain('give the same items the same `id` in both plans');
  });

  it('gives the keys as fields too', () => {
    const comparison = compareRunDirs(runA, runB, { toolCalls: false });
    expect(() => checkGates(comparison, [parseGate('mentions')])).toThrow(
      expect.objectContaining({
        code: 'no_matched_items',
        fields: expect.objectContaining({
          onlyA: 2,
          onlyB: 2,
          itemsA: 2,
          withIdA: 1,
          idsA: ['x'],
          itemsB: 2,
          withIdB: 2,
          idsB: ['t1', 't2'],
        }),
      }),
    );
  });
});
