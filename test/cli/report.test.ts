import { EventEmitter } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
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
    const out = io.out();
    expect(out).toContain('[simulated model]');
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
