/** Scoring inside `troupe fanout`: scorers from the plan, scores in results.jsonl and summary.json, judges on the same Supervisor. */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { captureIO, readResults, tempDir } from './helpers.ts';

const provider = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/eval/routed-scripted-provider.ts',
);

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-scoring-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'answerer.md'),
    '---\nname: answerer\ndescription: Answers questions.\ntools: [complete_task]\n---\nAnswer the question.\n',
  );
  writeFileSync(
    path.join(dir, 'agents', 'judge.md'),
    '---\nname: judge\ndescription: Grades answers.\ntools: [complete_task]\n---\nJUDGE-MARK: grade the answer.\n',
  );
});
afterEach(() => cleanup());

function writePlan(lines: readonly string[]): string {
  const file = path.join(dir, 'plan.yaml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const SCRIPTED = [
  `provider: { module: ${JSON.stringify(provider)} }`,
  'providerOptions:',
  '  scripts:',
  '    - { match: JUDGE-MARK, result: { score: 0.9, pass: true, reason: Plausible. } }',
  '    - { match: ITEM-1, result: { answer: 42 } }',
  '    - { match: ITEM-2, result: { answer: Lyon } }',
];

describe('scoring during troupe fanout', () => {
  it('scores each item as it ends and writes the scores into results.jsonl and summary.json', async () => {
    const plan = writePlan([
      'name: scored',
      'agent: answerer',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      ...SCRIPTED,
      'runs:',
      '  - { id: q1, task: "ITEM-1: What is 6 x 7?", expected: { answer: 42 } }',
      '  - { id: q2, task: "ITEM-2: Capital of France?", expected: { answer: Paris } }',
      'scorers:',
      '  - { name: answer, type: jsonPath, path: $.answer, expectedPath: $.answer }',
      '  - { name: quality, type: judge, agent: judge, rubric: Be fair. }',
    ]);
    const out = path.join(dir, 'run');
    const io = captureIO();
    expect(await main(['fanout', plan, '--out', out, '--json'], io)).toBe(0);

    const results = readResults(path.join(out, 'results.jsonl'));
    expect(results.map((line) => [line.label, line.index, line.parentId])).toEqual(
      expect.arrayContaining([
        ['q1', 0, null],
        ['q2', 1, null],
      ]),
    );
    expect(results).toHaveLength(2);
    const byId = new Map(results.map((line) => [line.label, line]));
    expect(byId.get('q1')?.scores).toEqual({
      answer: { score: 1, pass: true },
      quality: {
        score: 0.9,
        pass: true,
        detail: 'Plausible.',
        judge: {
          agentId: `${byId.get('q1')?.agentId}-judge-quality`,
          usage: expect.any(Object),
          costUsd: null,
        },
      },
    });
    expect(byId.get('q2')?.scores?.answer).toEqual({
      score: 0,
      pass: false,
      detail: 'expected "Paris", got "Lyon"',
    });

    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.counts).toMatchObject({ planned: 2, completed: 2, nested: { completed: 0, failed: 0 } });
    expect(summary.scoring?.scorers).toEqual({
      answer: {
        type: 'jsonPath',
        items: 2,
        passed: 1,
        errors: 0,
        notScored: 0,
        passRate: 0.5,
        meanScore: 0.5,
      },
      quality: expect.objectContaining({ type: 'judge', items: 2, passed: 2, passRate: 1, meanScore: 0.9 }),
    });
    expect(summary.scoring?.items.map((item) => [item.id, item.scores.answer?.pass])).toEqual([
      ['q1', true],
      ['q2', false],
    ]);
    // Judges leave journals next to the items' but no result lines and no progress events.
    expect(
      readdirSync(path.join(out, 'journals'))
        .filter((file) => file.includes('-judge-'))
        .sort(),
    ).toEqual(results.map((line) => `${line.agentId}-judge-quality.jsonl`).sort());
    const events = io
      .out()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; agentId?: string });
    expect(events.filter((event) => event.agentId?.includes('-judge-'))).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      type: 'summary',
      file: path.join(out, 'summary.json'),
      summary: { agentCount: 2, scoring: { scorers: { answer: { passed: 1 } }, itemCount: 2 } },
    });
    // The per-agent and per-item lists stay in summary.json: a 100,000-entry run's event was one
    // line of tens of megabytes.
    const last = events.at(-1) as { summary?: { agents?: unknown; scoring?: { items?: unknown } } };
    expect(last.summary?.agents).toBeUndefined();
    expect(last.summary?.scoring?.items).toBeUndefined();
    expect(summary.agents).toHaveLength(2);
    expect(summary.scoring?.items).toHaveLength(2);
  });

  it('scores the results troupe resume recovers from journals, judging them again under a new id', async () => {
    const plan = writePlan([
      'agent: answerer',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      ...SCRIPTED,
      'runs:',
      '  - { id: q1, task: "ITEM-1", expected: { answer: 42 }, metadata: { split: test } }',
      '  - { id: q2, task: "ITEM-2", expected: { answer: Paris } }',
      'scorers:',
      '  - { name: answer, type: jsonPath, path: $.answer, expectedPath: $.answer }',
      '  - { name: quality, type: judge, agent: judge }',
    ]);
    const out = path.join(dir, 'run');
    expect(await main(['fanout', plan, '--out', out, '--json'], captureIO())).toBe(0);
    // A run's metadata goes into its result line (to slice scores by it), none when it has none.
    const metadataOf = () =>
      readResults(path.join(out, 'results.jsonl'))
        .map((line) => [line.label, line.metadata])
        .sort();
    expect(metadataOf()).toEqual([
      ['q1', { split: 'test' }],
      ['q2', undefined],
    ]);
    // As if the command had died after both agents ended but before their lines were written.
    writeFileSync(path.join(out, 'results.jsonl'), '');
    expect(await main(['resume', out, '--json'], captureIO())).toBe(0);

    const results = readResults(path.join(out, 'results.jsonl'));
    expect(results.map((line) => [line.label, line.recoveredFrom, line.scores?.answer?.pass]).sort()).toEqual(
      [
        ['q1', 'journal', true],
        ['q2', 'journal', false],
      ],
    );
    for (const line of results)
      expect(line.scores?.quality?.judge?.agentId).toBe(`${line.agentId}-judge-quality-s1`);
    // Lines recovered from the journals carry it too (from their Started event).
    expect(metadataOf()).toEqual([
      ['q1', { split: 'test' }],
      ['q2', undefined],
    ]);
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.scoring?.scorers.answer).toMatchObject({ passed: 1, notScored: 0 });
  });

  it('judges again under ids no cut-off judge has when the session that judged was killed outright', async () => {
    const plan = writePlan([
      'agent: answerer',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      ...SCRIPTED,
      'runs:',
      '  - { id: q1, task: "ITEM-1", expected: { answer: 42 } }',
      'scorers:',
      '  - { name: quality, type: judge, agent: judge }',
    ]);
    const out = path.join(dir, 'run');
    expect(await main(['fanout', plan, '--out', out, '--json'], captureIO())).toBe(0);
    // As if killed -9 while judging: the agent ended, its judge had only started, and neither the
    // result line nor summary.json (with its sessions) was written.
    writeFileSync(path.join(out, 'results.jsonl'), '');
    rmSync(path.join(out, 'summary.json'));
    const journals = path.join(out, 'journals');
    const [judge] = readdirSync(journals).filter((file) => file.includes('-judge-'));
    if (judge === undefined) throw new Error('no judge journal');
    const started = readFileSync(path.join(journals, judge), 'utf8').split('\n').slice(0, 2).join('\n');
    writeFileSync(path.join(journals, judge), `${started}\n`);

    expect(await main(['resume', out, '--json'], captureIO())).toBe(0);
    const [line] = readResults(path.join(out, 'results.jsonl'));
    expect(line?.scores?.quality).toMatchObject({
      pass: true,
      judge: { agentId: `${line?.agentId}-judge-quality-s1` },
    });
    for (const file of readdirSync(journals))
      expect(
        verifyJournalFile(path.join(journals, file), { rerender: journalRerender() }),
        file,
      ).toMatchObject({
        ok: true,
      });
  });

  it("troupe report --html shows each scorer with the summary counts, every entry's scores and what the judges cost", async () => {
    const plan = writePlan([
      'agent: answerer',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      `provider: { module: ${JSON.stringify(provider)} }`,
      'providerOptions:',
      '  scripts:',
      '    - { match: JUDGE-MARK, result: { score: 0.9, pass: true, reason: "<img src=x onerror=alert(1)>" } }',
      '    - { match: ITEM-1, result: { answer: 42 } }',
      '    - { match: ITEM-2, result: { answer: Lyon } }',
      'runs:',
      '  - { id: q1, task: "ITEM-1 <script>alert(1)</script>", expected: { answer: 42 } }',
      '  - { id: q2, task: "ITEM-2", expected: { answer: Paris } }',
      'scorers:',
      '  - { name: exact, type: exact }',
      '  - { name: lyon, type: contains, value: Lyon }',
      '  - { name: quality, type: judge, agent: judge }',
    ]);
    const out = path.join(dir, 'run');
    expect(await main(['fanout', plan, '--out', out, '--json'], captureIO())).toBe(0);
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    const scorers = summary.scoring?.scorers ?? {};
    expect(Object.keys(scorers)).toEqual(['exact', 'lyon', 'quality']);
    expect([scorers.exact?.passed, scorers.lyon?.passed, scorers.quality?.passed]).toEqual([1, 1, 2]);

    const file = path.join(dir, 'report.html');
    expect(await main(['report', out, '--html', file], captureIO())).toBe(0);
    const html = readFileSync(file, 'utf8');
    expect(html).toContain('<section id="scores"><h2>Scores (3 scorers, 2 plan entries)</h2>');
    for (const [name, totals] of Object.entries(scorers))
      expect(html).toContain(
        `<tr><td>${name}</td><td>${totals.type}</td><td class="num">${totals.passed}/${totals.items}</td><td class="num">${(totals.passRate * 100).toFixed(1)}%</td><td class="num">${totals.meanScore.toFixed(2)}</td><td class="num">${totals.errors}</td><td class="num">${totals.notScored}</td>`,
      );
    // One column per scorer in the agent table, each entry's verdicts in its row.
    expect(html).toContain('<th>time</th><th>exact</th><th>lyon</th><th>quality</th><th>task / result</th>');
    const results = readResults(path.join(out, 'results.jsonl'));
    const rowOf = (label: string): string => {
      const agentId = results.find((line) => line.label === label)?.agentId;
      const row = html.split('<tr class="agent"').find((part) => part.startsWith(` data-agent="${agentId}"`));
      if (row === undefined) throw new Error(`no row for ${label}`);
      return row.slice(0, row.indexOf('</tr>'));
    };
    expect(rowOf('q1')).toMatch(
      /<td class="score"><span class="completed">pass<\/span> 1\.00<\/td><td class="score"><span class="failed">FAIL<\/span> 0\.00.*<td class="score"><span class="completed">pass<\/span> 0\.90/,
    );
    expect(rowOf('q2')).toMatch(
      /<td class="score"><span class="failed">FAIL<\/span> 0\.00.*<td class="score"><span class="completed">pass<\/span> 1\.00<\/td><td class="score"><span class="completed">pass<\/span> 0\.90/,
    );
    expect(rowOf('q1')).toContain(
      `judge ${results.find((line) => line.label === 'q1')?.agentId}-judge-quality`,
    );
    // The judges' cost beside the run's; judges are not agents of the run.
    expect(html).toMatch(
      /<span>cost<\/span><small>judges not included<\/small><\/div><div class="card"><b>unknown<\/b><span>judges cost<\/span><small>2 judge agents, not counted as plan entries<\/small>/,
    );
    expect(html).toMatch(/<b>2<\/b><span>agents<\/span><small>2 plan entries<\/small>/);
    // What the agents and the judges wrote is escaped.
    expect(html).not.toMatch(/<img|<script>alert/);
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('prints each scorer in the closing summary', async () => {
    const plan = writePlan([
      'agent: answerer',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      ...SCRIPTED,
      'runs:',
      '  - { task: "ITEM-1", expected: 42 }',
      'scorers:',
      '  - { type: numeric, path: $.answer }',
    ]);
    const io = captureIO();
    expect(await main(['fanout', plan, '--out', path.join(dir, 'run')], io)).toBe(0);
    expect(io.out()).toContain('score numeric (numeric): 1/1 passed (100.0%), mean 1.00');
  });

  it('reports bad scorers at their line and column before anything runs', async () => {
    const plan = writePlan([
      'agent: answerer',
      'agents: agents',
      'runs:',
      '  - task: hi',
      'scorers:',
      '  - type: regex',
      '    pattern: "(?=x)"',
      '  - type: judge',
      '    agent: nobody',
      '  - type: exact',
      '    bogus: 1',
      '  - type: jsonPath',
      '    path: verdict',
    ]);
    const io = captureIO();
    expect(await main(['fanout', plan, '--out', path.join(dir, 'run')], io)).toBe(1);
    const lines = io.err().trim().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(
        /\/plan\.yaml:7:14: scorers\[0\]\.pattern: expected a regular expression in RE2 syntax/,
      ),
      expect.stringMatching(
        /\/plan\.yaml:9:12: scorers\[1\]\.agent: expected the name of an available agent \(.*answerer.*\), got `"nobody"`/,
      ),
      expect.stringMatching(
        /\/plan\.yaml:11:5: scorers\[2\]\.bogus: expected one of the keys of a `exact` scorer \(name, type, path, expectedPath, value, ignoreCase, trim\)/,
      ),
      expect.stringMatching(
        /\/plan\.yaml:13:11: scorers\[3\]\.path: expected a JSONPath \(RFC 9535\) such as `\$\.verdict`, got `"verdict"`/,
      ),
      'troupe: 4 problem(s) in the plan; nothing was run',
    ]);
  });
});
