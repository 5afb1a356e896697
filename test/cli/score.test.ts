/** `troupe score RUN_DIR [--plan FILE]`: scoring a finished run after the fact. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { runSummaryOf } from '../../src/run-dir/report-text.ts';
import { rescoreRunDir } from '../../src/run-dir/rescore.ts';
import { RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { buildTimeline } from '../../src/run-dir/timeline.ts';
import { captureIO, readResults, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
let runDir: string;
beforeEach(async () => {
  ({ dir, cleanup } = tempDir('troupe-score-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  writeFileSync(path.join(dir, 'b.md'), '# B\nBeta.\n');
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    [
      'agent: worker',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      'runs:',
      '  - { id: a, task: Review a.md }',
      '  - { id: b, task: Review b.md }',
      '',
    ].join('\n'),
  );
  runDir = path.join(dir, 'run');
  expect(await main(['fanout', path.join(dir, 'plan.yaml'), '--out', runDir, '--json'], captureIO())).toBe(0);
});
afterEach(() => cleanup());

describe('troupe score', () => {
  it("scores a run that had no scorers with another plan's scorers and expected values, matched by id", async () => {
    // The scoring plan lists the items in another order: they are matched by id.
    writeFileSync(
      path.join(dir, 'score.yaml'),
      [
        'agent: worker',
        `cwd: ${JSON.stringify(dir)}`,
        'runs:',
        '  - { id: b, task: x, expected: b.md }',
        '  - { id: a, task: x, expected: nowhere.md }',
        'scorers:',
        '  - { name: mentions, type: contains, path: $.summary }',
        '  - { name: simulated, type: regex, pattern: "^\\\\[simulated\\\\]", path: $.summary }',
        '',
      ].join('\n'),
    );
    const io = captureIO();
    expect(await main(['score', runDir, '--plan', path.join(dir, 'score.yaml')], io)).toBe(0);
    const out = io.out();
    expect(out).toMatch(/^#\s+ID\s+MENTIONS\s+SIMULATED\s+WHY$/m);
    expect(out).toMatch(/^0\s+a\s+FAIL 0\.00\s+pass 1\.00\s+mentions: missing "nowhere\.md"$/m);
    expect(out).toMatch(/^1\s+b\s+pass 1\.00\s+pass 1\.00$/m);
    expect(out).toContain('scored 2 of 2 plan entries');
    expect(out).toContain('mentions (contains): 1/2 passed (50.0%), mean 0.50');

    const lines = readResults(path.join(runDir, 'results.jsonl'));
    expect(Object.fromEntries(lines.map((line) => [line.label, line.scores?.mentions?.pass]))).toEqual({
      a: false,
      b: true,
    });
    const plan = JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')) as RunPlan;
    expect(plan.scorers?.map((scorer) => scorer.name)).toEqual(['mentions', 'simulated']);
    expect(plan.runs.map((run) => [run.label, run.expected])).toEqual([
      ['a', 'nowhere.md'],
      ['b', 'b.md'],
    ]);
    const summary = JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.sessions.map((session) => session.kind)).toEqual(['fanout', 'score']);
    expect(summary.scoring?.scorers.simulated).toMatchObject({ passed: 2, passRate: 1 });

    // Scoring again uses the scorers now recorded in the run directory.
    const again = captureIO();
    expect(await main(['score', runDir, '--json'], again)).toBe(0);
    expect(JSON.parse(again.out())).toMatchObject({ scorers: { mentions: { passed: 1 } } });
  });

  it('fails with a clear message when neither the run nor a plan declares scorers', async () => {
    const io = captureIO();
    expect(await main(['score', runDir], io)).toBe(1);
    expect(io.err()).toMatch(
      /troupe: no_scorers: Expected scorers to score .* its plan declares none; give a plan with `scorers` \(--plan FILE\)/,
    );
  });
  it('counts an entry whose retry was killed as interrupted, as the reports do, and keeps the budget spent', async () => {
    // A `troupe resume --retry-failed` killed mid-retry: the retry's journal starts and ends
    // nowhere, and it has no result line.
    const [first] = readResults(path.join(runDir, 'results.jsonl'));
    if (first === undefined) throw new Error('the run has no result line');
    const journal = readFileSync(path.join(runDir, 'journals', `${first.agentId}.jsonl`), 'utf8');
    writeFileSync(path.join(runDir, 'journals', `${first.agentId}-r2.jsonl`), `${journal.split('\n')[0]}\n`);
    const saved = path.join(runDir, 'summary.json');
    const before = JSON.parse(readFileSync(saved, 'utf8')) as RunSummary;
    writeFileSync(saved, JSON.stringify({ ...before, budgetSpent: '12 tokens' }));
    writeFileSync(
      path.join(dir, 'score.yaml'),
      [
        'agent: worker',
        `cwd: ${JSON.stringify(dir)}`,
        'runs:',
        '  - { id: a, task: x }',
        '  - { id: b, task: x }',
        'scorers:',
        '  - { name: simulated, type: regex, pattern: "^\\\\[simulated\\\\]", path: $.summary }',
        '',
      ].join('\n'),
    );
    expect(await main(['score', runDir, '--plan', path.join(dir, 'score.yaml')], captureIO())).toBe(0);
    const summary = JSON.parse(readFileSync(saved, 'utf8')) as RunSummary;
    expect(summary.counts).toMatchObject({ planned: 2, completed: 1, failed: 0, interrupted: 1, notRun: 0 });
    expect(summary.complete).toBe(false);
    expect(summary.budgetSpent).toBe('12 tokens');
    // The reports say the same.
    const contents = readRunDir(runDir);
    expect(runSummaryOf(contents, buildTimeline(contents)).counts).toEqual(summary.counts);
  });
});

describe('troupe score rewrites results.jsonl a line at a time', () => {
  const scorePlan = (): string => {
    const file = path.join(dir, 'score.yaml');
    writeFileSync(
      file,
      [
        'agent: worker',
        `cwd: ${JSON.stringify(dir)}`,
        'runs:',
        '  - { id: a, task: x, expected: a.md }',
        '  - { id: b, task: x, expected: b.md }',
        'scorers:',
        '  - { name: mentions, type: contains, path: $.summary }',
        '',
      ].join('\n'),
    );
    return file;
  };

  it('keeps the lines it does not score as they were written, byte for byte', async () => {
    const file = path.join(runDir, 'results.jsonl');
    const [first, ...rest] = readFileSync(file, 'utf8').trimEnd().split('\n');
    // An earlier attempt of entry 0, written with spaces: superseded, so not scored again.
    const earlier = JSON.stringify({ ...JSON.parse(first ?? '{}'), agentId: 'x-0-old' }, null, 1).replace(
      /\n/g,
      ' ',
    );
    writeFileSync(file, `${earlier}\n${[first, ...rest].join('\n')}\n`);
    expect(await main(['score', runDir, '--plan', scorePlan()], captureIO())).toBe(0);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines[0]).toBe(earlier);
    expect(lines.slice(1).map((line) => Object.keys(JSON.parse(line).scores ?? {}))).toEqual([
      ['mentions'],
      ['mentions'],
    ]);
  });

  it('keeps the lines it cannot read (not JSON, not a result, over the bound) in place, byte for byte', async () => {
    const file = path.join(runDir, 'results.jsonl');
    const [first, second] = readFileSync(file, 'utf8').trimEnd().split('\n');
    // Not UTF-8, and JSON that is not a result line, before a result line one byte over the bound
    // (a small one: the default is 256 MiB), which is kept unread, not scored.
    const garbage = Buffer.from([0x6e, 0x6f, 0xff, 0xfe, 0x20, 0x7b]);
    const head = Buffer.concat([garbage, Buffer.from('\n{"note":"not a result"}\n')]);
    const maxLineBytes = 4096;
    const long = `${first}${' '.repeat(maxLineBytes + 1 - Buffer.byteLength(first ?? ''))}`;
    const tail = `\n${first}\n{"torn\n${second}\n`;
    writeFileSync(file, Buffer.concat([head, Buffer.from(long), Buffer.from(tail)]));

    const result = await rescoreRunDir(runDir, { planFile: scorePlan(), cwd: dir, maxLineBytes });
    expect(result.unread).toEqual({ count: 4, firstLine: 1 });
    const after = readFileSync(file);
    expect(
      after.subarray(0, head.length + long.length).equals(Buffer.concat([head, Buffer.from(long)])),
    ).toBe(true);
    const lines = after
      .subarray(head.length + long.length)
      .toString('utf8')
      .split('\n');
    expect(lines[0]).toBe('');
    expect(lines[2]).toBe('{"torn');
    expect([lines[1], lines[3]].map((line) => Object.keys(JSON.parse(line ?? '{}').scores ?? {}))).toEqual([
      ['mentions'],
      ['mentions'],
    ]);
    expect(lines.slice(4)).toEqual(['']);
  });

  it('says how many lines it kept unread, and the first', async () => {
    const file = path.join(runDir, 'results.jsonl');
    const [first, second] = readFileSync(file, 'utf8').trimEnd().split('\n');
    writeFileSync(file, `no\n{"note":"not a result"}\n${first}\n{"torn\n${second}\n`);
    const io = captureIO();
    expect(await main(['score', runDir, '--plan', scorePlan()], io)).toBe(0);
    expect(io.err()).toContain('kept 3 line(s) of results.jsonl it could not read as they were');
    expect(io.err()).toContain('(first: line 1)');
  });

  it('writes to a temporary file renamed at the end: a failed rewrite leaves the file as it was', () => {
    const file = path.join(runDir, 'results.jsonl');
    const before = readFileSync(file, 'utf8');
    const writer = RunDirWriter.reopen(runDir);
    function* pieces(): Generator<string> {
      // Read while the rewrite is going on: the file is still whole.
      for (const line of readFileSync(file, 'utf8').trimEnd().split('\n')) yield `${line}\n`;
      throw new Error('boom');
    }
    expect(() => writer.rewriteResults(pieces())).toThrow('boom');
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(readdirSync(runDir).filter((name) => name.includes('.tmp-'))).toEqual([]);
  });
});
