/** Two real run directories to compare: the same data set before and after a change, on the simulated model. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { main } from '../../src/cli/main.ts';
import { captureIO, tempDir } from '../run-dir/helpers.ts';

/** What {@link makeRuns} made. */
export interface Runs {
  readonly dir: string;
  readonly runA: string;
  readonly runB: string;
  readonly cleanup: () => void;
}

/**
 * Run A reviews a.md (id `a`), b.md (id `b`) and, without an id, a.md again; run B reviews c.md
 * for item `b` (so it no longer mentions b.md: a regression of the `mentions` scorer, and a
 * different `read_file` call), keeps the rest, and has an extra item `d`. `extraTask` is added to
 * item `a`'s task in both runs (the HTML test puts markup there).
 */
export async function makeRuns(extraTask = ''): Promise<Runs> {
  const { dir, cleanup } = tempDir('troupe-compare-');
  for (const name of ['a', 'b', 'c', 'd'])
    writeFileSync(path.join(dir, `${name}.md`), `# ${name}\nText ${name}.\n`);
  const itemA = `  - { id: a, task: ${JSON.stringify(`Review a.md${extraTask}`)}, expected: a.md }`;
  const scorers = ['scorers:', '  - { name: mentions, type: contains, path: $.summary }'];
  const head = ['agent: worker', `cwd: ${JSON.stringify(dir)}`, 'threads: 1', 'concurrency: 1'];
  writeFileSync(
    path.join(dir, 'a.yaml'),
    [
      ...head,
      'name: before',
      'runs:',
      itemA,
      '  - { id: b, task: Review b.md, expected: b.md }',
      '  - { task: Review a.md once more, expected: a.md }',
      ...scorers,
      '',
    ].join('\n'),
  );
  writeFileSync(
    path.join(dir, 'b.yaml'),
    [
      ...head,
      'name: after',
      'runs:',
      itemA,
      '  - { id: b, task: Review c.md, expected: b.md }',
      '  - { task: Review a.md once more, expected: a.md }',
      '  - { id: d, task: Review d.md, expected: d.md }',
      ...scorers,
      '',
    ].join('\n'),
  );
  const runA = path.join(dir, 'run-a');
  const runB = path.join(dir, 'run-b');
  for (const [plan, out] of [
    ['a.yaml', runA],
    ['b.yaml', runB],
  ] as const) {
    const io = captureIO();
    const code = await main(['fanout', path.join(dir, plan), '--out', out, '--json'], io);
    if (code !== 0) throw new Error(`fanout ${plan} exited ${code}: ${io.err()}`);
  }
  return { dir, runA, runB, cleanup };
}
