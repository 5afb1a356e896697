import { EventEmitter } from 'node:events';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { damageWarnings } from '../../src/cli/shared/report-source.ts';
import { executeSession } from '../../src/run-dir/execute.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { captureIO, journalTypes, readResults, tempDir, waitUntil } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
let runDir: string;
let results: ResultLine[];

/** An interrupted run: one agent completed, one cancelled while waiting, one cancelled before it started. */
beforeAll(async () => {
  ({ dir, cleanup } = tempDir('troupe-report-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  const planFile = path.join(dir, 'plan.yaml');
  writeFileSync(
    planFile,
    [
      'name: report test',
      'cwd: .',
      'threads: 1',
      'concurrency: 2',
      'agent: worker',
      'runs:',
      '  - task: Review a.md',
      '  - task: Review a.md, then wait for an instruction.',
      '  - task: Review a.md once more',
    ].join('\n'),
  );
  const { plan, definitions } = await loadPlan(planFile);
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  runDir = path.join(dir, 'run');
  const writer = RunDirWriter.create(runDir, runPlan);
  const signals = new EventEmitter();
  const session = executeSession({
    plan: runPlan,
    writer,
    work: runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
    kind: 'fanout',
    definitions,
    json: true,
    io: captureIO(),
    signals,
  });
  const waiter = path.join(writer.paths.journals, `${runPlan.runs[1]?.agentId}.jsonl`);
  await waitUntil(
    () => journalTypes(waiter).includes('Waiting') && readResults(writer.paths.results).length >= 2,
    'two agents finished and one waits',
  );
  signals.emit('SIGINT');
  await session;
  results = readResults(writer.paths.results);
});
afterAll(() => cleanup());

/** Checks that every element is closed in order (void elements and self-closed SVG shapes aside). */
function checkWellFormed(html: string): void {
  const body = html.replace(/<(script|style)>[\s\S]*?<\/\1>/g, '<$1></$1>');
  const voids = new Set(['meta', 'br', 'input', 'img', 'hr', 'link']);
  const stack: string[] = [];
  for (const match of body.matchAll(/<(\/?)([a-zA-Z][\w-]*)([^>]*)>/g)) {
    const [, closing, name = '', rest = ''] = match;
    const tag = name.toLowerCase();
    if (voids.has(tag) || rest.endsWith('/')) continue;
    if (!closing) {
      stack.push(tag);
      continue;
    }
    expect(stack.pop(), `</${tag}> closes the last open element`).toBe(tag);
  }
  expect(stack).toEqual([]);
}

describe('troupe report', () => {
  it('prints a table of every agent with status, usage and the totals', async () => {
    expect(results.map((line) => [line.index, line.status, line.reason ?? null]).sort()).toEqual([
      [0, 'completed', null],
      [1, 'failed', 'cancelled'],
      [2, 'completed', null],
    ]);
    const io = captureIO();
    expect(await main(['report', runDir], io)).toBe(0);
    expect(io.err()).toBe('');
    const out = io.out();
    expect(out).toContain('[simulated model]');
    // A report calls no model: it says what the run used, not that troupe is using it now.
    expect(out).toContain(
      "this run used the simulated model: no API key was set when it ran, so its answers are canned, not a real model's",
    );
    expect(out).not.toContain('using the simulated model');
    expect(out).toMatch(/#\s+AGENT ID\s+DEFINITION\s+STATUS\s+ROUNDS\s+IN\s+OUT\s+COST\s+TIME\s+RESULT/);
    for (const line of results) expect(out).toContain(line.agentId);
    expect(out).toMatch(/failed \(cancelled\)/);
    expect(out).toMatch(/interrupted: 2 of 3 completed, 1 failed \(cancelled 1\)/);
    expect(out).toContain(`troupe resume ${runDir}`);
  });

  it('cuts table lines to COLUMNS when set, and nothing off a terminal otherwise', async () => {
    const saved = process.env.COLUMNS;
    try {
      delete process.env.COLUMNS;
      const wide = captureIO();
      expect(await main(['report', runDir], wide)).toBe(0);
      const header = wide
        .out()
        .split('\n')
        .find((line) => line.includes('AGENT ID'));
      expect(header).toMatch(/RESULT$/);
      process.env.COLUMNS = '60';
      const narrow = captureIO();
      expect(await main(['report', runDir], narrow)).toBe(0);
      const cut = narrow
        .out()
        .split('\n')
        .find((line) => line.includes('AGENT ID'));
      expect(cut).toHaveLength(59);
      expect(cut?.endsWith('…')).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.COLUMNS;
      else process.env.COLUMNS = saved;
    }
  });

  it('--json prints the summary', async () => {
    const io = captureIO();
    expect(await main(['report', runDir, '--json'], io)).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ interrupted: true, counts: { planned: 3, cancelled: 1 } });
  });

  it('--json counts the entries that started and have not ended (a run still going, or killed)', async () => {
    // The waiting agent as a kill leaves it: no result line, a journal without its end.
    const copy = path.join(dir, 'unended');
    cpSync(runDir, copy, { recursive: true });
    const waiter = results.find((line) => line.index === 1);
    if (waiter === undefined) throw new Error('expected a result for entry 1');
    const lines = readFileSync(path.join(copy, 'results.jsonl'), 'utf8').split('\n');
    writeFileSync(
      path.join(copy, 'results.jsonl'),
      lines.filter((line) => !line.includes(`"agentId":"${waiter.agentId}"`)).join('\n'),
    );
    const journal = path.join(copy, 'journals', `${waiter.agentId}.jsonl`);
    const events = readFileSync(journal, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    writeFileSync(journal, `${events.filter((line) => !line.includes('"type":"Failed"')).join('\n')}\n`);
    const io = captureIO();
    expect(await main(['report', copy, '--json'], io)).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ unended: 1 });
    const whole = captureIO();
    await main(['report', runDir, '--json'], whole);
    expect(JSON.parse(whole.out())).not.toHaveProperty('unended');
  });

  it('--html writes one well-formed, self-contained file with every agent, the timeline and the failures', async () => {
    const file = path.join(dir, 'report.html');
    const io = captureIO();
    expect(await main(['report', runDir, '--html', file], io)).toBe(0);
    expect(io.out()).toBe(`troupe: wrote ${file}\n`);
    const html = readFileSync(file, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    checkWellFormed(html);
    for (const line of results) {
      expect(html).toContain(`<g class="row status-${line.status}" data-agent="${line.agentId}" data-t="a-`);
      expect(html).toContain(`<tr class="agent" data-agent="${line.agentId}" data-t="a-`);
      expect(html).toContain(`<details class="transcript" id="a-`);
    }
    expect(html).toContain('<svg class="timeline"');
    expect(html).toContain('class="wait"');
    expect(html).toContain('Tokens by agent');
    expect(html).toContain('Failures (1)');
    expect(html).toContain('<b>Simulated model:</b>');
    expect(html).not.toMatch(/https?:\/\/|\/\/cdn|<link|\bsrc=|url\(/i);
    expect(html).toMatch(/<b>3<\/b><span>agents<\/span><small>3 plan entries<\/small>/);
    expect(html).toMatch(/<b>1<\/b><span>failed<\/span><\/div>/);
    // No scorers: no scores section, score columns or judges' cost.
    expect(html).not.toMatch(/id="scores"|<h2>Scores|judges cost|class="score"/);
    expect(html).toContain('<th>time</th><th>task / result</th>');
  });

  it('--html of one `troupe run` journal shows its agent as neither a plan entry nor a spawned one', async () => {
    // It said `0 plan entries + 1 spawned by agents`, marked the agent `↳` and its thread `?`.
    const journal = path.join(dir, 'one-run.jsonl');
    const ran = ['run', 'worker', '--task', 'Review a.md', '--cwd', dir, '--journal', journal];
    expect(await main(ran, captureIO())).toBe(0);
    const file = path.join(dir, 'one-run.html');
    expect(await main(['report', journal, '--html', file], captureIO())).toBe(0);
    const html = readFileSync(file, 'utf8');
    checkWellFormed(html);
    expect(html).toMatch(/<b>1<\/b><span>agents<\/span><\/div>/);
    expect(html).not.toContain('spawned by agents');
    expect(html).not.toContain('↳');
    expect(html).not.toContain('thread ?');
    expect(html).toContain('this process (1 agent)');
    expect(html).toMatch(/<tr class="agent" data-agent="[^"]+" data-t="a-0"><td>-<\/td>/);
  });

  it('--html counts a plan entry run again by its last attempt, as the summary does', async () => {
    const cancelled = results.find((line) => line.index === 1) as ResultLine;
    const rerun: ResultLine = {
      ...cancelled,
      agentId: `${cancelled.agentId}-r2`,
      attempt: 2,
      status: 'completed',
      reason: undefined,
      error: undefined,
    };
    const resultsFile = path.join(runDir, 'results.jsonl');
    const before = readFileSync(resultsFile, 'utf8');
    writeFileSync(resultsFile, `${before}${JSON.stringify(rerun)}\n`);
    try {
      const file = path.join(dir, 'rerun.html');
      expect(await main(['report', runDir, '--html', file], captureIO())).toBe(0);
      const html = readFileSync(file, 'utf8');
      expect(html).toMatch(/<b>4<\/b><span>agents<\/span><small>3 plan entries \(1 run again\)<\/small>/);
      expect(html).toMatch(/<b>3<\/b><span>completed<\/span>/);
      expect(html).toMatch(
        /<b>0<\/b><span>failed<\/span><small>last attempts only; 1 earlier not counted<\/small>/,
      );
    } finally {
      writeFileSync(resultsFile, before);
    }
  });
});

describe('troupe report and troupe show on damaged journals', () => {
  let damaged: string;
  let edited: string;
  let destroyed: string;

  /** A copy of the run: agent 0's journal with an event edited in place, agent 2's with a line destroyed. */
  beforeAll(() => {
    damaged = path.join(dir, 'damaged');
    cpSync(runDir, damaged, { recursive: true });
    const journalOf = (index: number): string => {
      const line = results.find((result) => result.index === index) as ResultLine;
      return path.join(damaged, 'journals', `${line.agentId}.jsonl`);
    };
    edited = journalOf(0);
    const lines = readFileSync(edited, 'utf8').split('\n');
    const at = lines.findIndex((line, index) => index > 0 && line.includes('"round":1'));
    lines[at] = (lines[at] ?? '').replace('"round":1', '"round":7');
    writeFileSync(edited, lines.join('\n'));
    destroyed = journalOf(2);
    const other = readFileSync(destroyed, 'utf8').split('\n');
    other[2] = '{not json';
    writeFileSync(destroyed, other.join('\n'));
  });

  it('the table report warns on stderr for each, with the line and what to run, and still exits 0', async () => {
    const io = captureIO();
    expect(await main(['report', damaged], io)).toBe(0);
    expect(io.out()).toContain('AGENT ID');
    const warnings = io.err().trimEnd().split('\n');
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(
      new RegExp(
        `^warning: journal ${edited} is damaged: line \\d+: Event \\d+ \\(\\w+\\) does not hash to its recorded hash; check it with \`troupe verify ${edited}\`$`,
      ),
    );
    expect(warnings[1]).toContain(
      `warning: journal ${destroyed} is damaged: line 3: Expected a JSON event, found invalid JSON`,
    );
    expect(warnings[1]).toMatch(/; check it with `troupe verify .*\.jsonl`$/);
  });

  it('--json lists the damaged journals, and --html shows them in a banner', async () => {
    const json = captureIO();
    expect(await main(['report', damaged, '--json'], json)).toBe(0);
    const summary = JSON.parse(json.out()) as { damagedJournals: unknown };
    expect(summary.damagedJournals).toEqual([
      {
        agentId: path.basename(edited, '.jsonl'),
        journal: edited,
        damage: expect.stringMatching(/^line \d+: Event/),
      },
      {
        agentId: path.basename(destroyed, '.jsonl'),
        journal: destroyed,
        damage: expect.stringMatching(/^line 3: /),
      },
    ]);
    expect(json.err()).toContain('is damaged');
    const file = path.join(dir, 'damaged.html');
    expect(await main(['report', damaged, '--html', file], captureIO())).toBe(0);
    const html = readFileSync(file, 'utf8');
    checkWellFormed(html);
    expect(html).toContain('<div class="banner damaged"><b>2 damaged journals:</b>');
    expect(html).toContain(`<code>${edited}</code>: line `);
    expect(html).toContain('found invalid JSON');
    // The intact report has no banner.
    const intact = path.join(dir, 'intact.html');
    expect(await main(['report', runDir, '--html', intact], captureIO())).toBe(0);
    expect(readFileSync(intact, 'utf8')).not.toContain('damaged journal');
  });

  it('troupe show and troupe report JOURNAL warn about the journal they read and carry `damage` in --json', async () => {
    const show = captureIO();
    expect(await main(['show', damaged, '2'], show)).toBe(0);
    expect(show.err()).toMatch(new RegExp(`^warning: journal ${destroyed} is damaged: line 3: .*\n$`));
    const intact = captureIO();
    expect(await main(['show', damaged, '1'], intact)).toBe(0);
    expect(intact.err()).toBe('');
    const json = captureIO();
    expect(await main(['show', edited, '--json'], json)).toBe(0);
    expect(JSON.parse(json.out())).toMatchObject({ damage: expect.stringMatching(/^line \d+: Event \d+/) });
    expect(json.err()).toContain(`warning: journal ${edited} is damaged`);
    const report = captureIO();
    expect(await main(['report', destroyed, '--json'], report)).toBe(0);
    expect(JSON.parse(report.out())).toMatchObject({ damage: expect.stringMatching(/^line 3: /) });
    expect(report.err()).toContain(`check it with \`troupe verify ${destroyed}\``);
  });

  it('names at most 10 journals, then counts the rest', () => {
    const many = Array.from({ length: 13 }, (_, index) => ({
      agentId: `a${index}`,
      journal: `journals/a${index}.jsonl`,
      damage: 'line 2: Event 1 (ToolCall) does not hash to its recorded hash',
    }));
    const lines = damageWarnings(many).trimEnd().split('\n');
    expect(lines).toHaveLength(11);
    expect(lines[9]).toBe(
      'warning: journal journals/a9.jsonl is damaged: line 2: Event 1 (ToolCall) does not hash to its recorded hash; check it with `troupe verify journals/a9.jsonl`',
    );
    expect(lines[10]).toBe('warning: and 3 more damaged journal(s)');
    expect(damageWarnings([])).toBe('');
  });
});
