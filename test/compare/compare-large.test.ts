import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { compareRunDirs } from '../../src/compare/compare.ts';
import { COMPARE_JSON_PIECE_CHARS, COMPARE_TOOL_CALL_ITEMS } from '../../src/constants.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import { captureIO } from '../run-dir/helpers.ts';
import { makeRuns, type Runs } from './helpers.ts';

const ITEMS = COMPARE_TOOL_CALL_ITEMS + 1;

let runs: Runs;
let bigA: string;
let bigB: string;

/**
 * A run of ITEMS entries made from `run`'s item `b` (run A reads b.md, run B c.md: their tool
 * calls differ), each with its own copy of that item's journal.
 */
function grow(run: string, out: string): void {
  const plan = JSON.parse(readFileSync(path.join(run, 'plan.json'), 'utf8')) as RunPlan;
  const lines = readFileSync(path.join(run, 'results.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ResultLine);
  const line = lines.find((l) => l.label === 'b');
  const entry = plan.runs.find((r) => r.label === 'b');
  if (line === undefined || entry === undefined) throw new Error(`no item b in ${run}`);
  mkdirSync(path.join(out, 'journals'), { recursive: true });
  const runsOut = Array.from({ length: ITEMS }, (_, index) => {
    const { label: _label, ...rest } = entry;
    return { ...rest, index, agentId: `${plan.runId}-${index}` };
  });
  writeFileSync(path.join(out, 'plan.json'), JSON.stringify({ ...plan, runs: runsOut }));
  const linesOut = runsOut.map((r) => {
    const { label: _label, ...rest } = line;
    return JSON.stringify({ ...rest, index: r.index, agentId: r.agentId });
  });
  writeFileSync(path.join(out, 'results.jsonl'), `${linesOut.join('\n')}\n`);
  for (const r of runsOut)
    copyFileSync(
      path.join(run, 'journals', `${line.agentId}.jsonl`),
      path.join(out, 'journals', `${r.agentId}.jsonl`),
    );
}

beforeAll(async () => {
  runs = await makeRuns();
  bigA = path.join(runs.dir, 'big-a');
  bigB = path.join(runs.dir, 'big-b');
  grow(runs.runA, bigA);
  grow(runs.runB, bigB);
});
afterAll(() => runs.cleanup());

async function compareOutput(...flags: string[]): Promise<string> {
  const io = captureIO();
  await main(['compare', bigA, bigB, '--all', ...flags], io);
  return io.out();
}

describe(`troupe compare of runs over ${COMPARE_TOOL_CALL_ITEMS} items`, () => {
  it('reads no journal: the same table with the journals gone, and says how to compare tool calls', async () => {
    const comparison = compareRunDirs(bigA, bigB);
    expect(comparison.toolCallsCompared).toBe(false);
    expect(comparison.items.filter((item) => item.toolCalls !== undefined)).toEqual([]);
    const withJournals = await compareOutput();
    expect(withJournals).toContain(
      `tool calls: not compared (${ITEMS} items ran in both runs, more than ${COMPARE_TOOL_CALL_ITEMS}: their ${2 * ITEMS} journals were not read; --tool-calls compares them)`,
    );
    expect(withJournals).not.toContain('TOOL CALLS');

    // --tool-calls reads them: every item's read_file differs.
    const forced = compareRunDirs(bigA, bigB, { toolCalls: true });
    expect(forced.toolCallsCompared).toBe(true);
    expect(forced.items[0]?.toolCalls).toEqual({
      onlyA: [{ name: 'read_file', args: '{"path":"b.md"}', count: 1 }],
      onlyB: [{ name: 'read_file', args: '{"path":"c.md"}', count: 1 }],
      common: 0,
    });

    for (const run of [bigA, bigB]) rmSync(path.join(run, 'journals'), { recursive: true });
    expect(compareRunDirs(bigA, bigB)).toEqual(comparison);
    expect(await compareOutput()).toBe(withJournals);
  });

  it('--json prints its document a piece at a time, never whole, and stops once stdout is gone', async () => {
    const writes: string[] = [];
    expect(
      await main(['compare', bigA, bigB, '--json'], {
        stdout: (text) => writes.push(text),
        stderr: () => {},
      }),
    ).toBe(0);
    const document = writes.join('');
    expect((JSON.parse(document) as { items: unknown[] }).items).toHaveLength(ITEMS);
    // The whole document printed at once held it twice more (masked copy, string) at 100,000 items.
    expect(writes.length).toBeGreaterThan(document.length / (2 * COMPARE_JSON_PIECE_CHARS));
    for (const piece of writes) {
      expect(piece.length).toBeLessThan(2 * COMPARE_JSON_PIECE_CHARS);
      expect(piece.endsWith('\n')).toBe(true);
    }

    const closed = new AbortController();
    let printed = 0;
    const io = {
      stdout: () => {
        printed += 1;
        closed.abort();
      },
      stderr: () => {},
      stdoutClosed: closed.signal,
    };
    expect(await main(['compare', bigA, bigB, '--json'], io)).toBe(0);
    expect(printed).toBe(1);
  });

  it('still compares the tool calls of small runs unless told not to', async () => {
    expect(compareRunDirs(runs.runA, runs.runB).toolCallsCompared).toBe(true);
    const skipped = compareRunDirs(runs.runA, runs.runB, { toolCalls: false });
    expect(skipped.toolCallsCompared).toBe(false);
    expect(skipped.items.filter((item) => item.toolCalls !== undefined)).toEqual([]);
    const io = captureIO();
    await main(['compare', runs.runA, runs.runB, '--no-tool-calls'], io);
    expect(io.out()).toContain('tool calls: not compared (--no-tool-calls)');
    expect(io.out()).not.toContain('read_file');
  });
});
