import { createHash } from 'node:crypto';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { compareRunDirs, compareRuns, type RunComparison } from '../../src/compare/compare.ts';
import { compareText } from '../../src/compare/compare-text.ts';
import { checkGates, parseGate } from '../../src/compare/gate.ts';
import { diffToolCalls, type ToolCallCount } from '../../src/compare/tool-calls.ts';
import { COMPARE_OUTPUT_CHARS } from '../../src/constants.ts';
import { readRunDir } from '../../src/run-dir/run-dir.ts';
import { captureIO } from '../run-dir/helpers.ts';
import { makeRuns, type Runs } from './helpers.ts';

let runs: Runs;
let comparison: RunComparison;
beforeAll(async () => {
  runs = await makeRuns();
  comparison = compareRunDirs(runs.runA, runs.runB);
});
afterAll(() => runs.cleanup());

describe('compareRunDirs', () => {
  it('matches items by id, else by position, and lists the ones only in one run', () => {
    expect(comparison.items.map((item) => [item.key, item.outcome])).toEqual([
      ['id:a', 'same'],
      ['id:b', 'same'],
      ['#2', 'same'],
      ['id:d', 'only_b'],
    ]);
    expect(comparison).toMatchObject({ matched: 3, onlyA: 0, onlyB: 1, fixed: 0, regressed: 0 });
  });

  it("compares each scorer's pass rate over the matched items and flags the item that regressed", () => {
    expect(comparison.scorers.mentions).toEqual({
      name: 'mentions',
      declaredIn: 'both',
      items: 3,
      passedA: 3,
      passedB: 2,
      passRateA: 1,
      passRateB: 2 / 3,
      delta: 2 / 3 - 1,
      meanA: 1,
      meanB: 2 / 3,
      improved: 0,
      regressed: 1,
    });
    const b = comparison.items.find((item) => item.key === 'id:b');
    expect(b?.scores.mentions).toMatchObject({
      change: 'regressed',
      delta: -1,
      a: { pass: true },
      b: { pass: false },
    });
    expect(b?.changed).toBe(true);
    expect(comparison.items.find((item) => item.key === 'id:a')?.changed).toBe(false);
  });

  it('shows which tool calls differ, from the journals', () => {
    const b = comparison.items.find((item) => item.key === 'id:b');
    expect(b?.toolCalls).toEqual({
      onlyA: [{ name: 'read_file', args: '{"path":"b.md"}', count: 1 }],
      onlyB: [{ name: 'read_file', args: '{"path":"c.md"}', count: 1 }],
      common: 0,
    });
    const a = comparison.items.find((item) => item.key === 'id:a');
    expect(a?.toolCalls).toEqual({ onlyA: [], onlyB: [], common: 1 });
  });

  it("makes a task row that cannot be read that item's problem, not the comparison's", () => {
    const a = readRunDir(runs.runA);
    const b = readRunDir(runs.runB);
    // Item b's task is a row of a tasks file plan.json does not name: run_dir_io when read.
    const rowless = {
      ...a,
      plan: {
        ...a.plan,
        runs: a.plan.runs.map((run) =>
          run.label === 'b' ? { ...run, row: { offset: 0, length: 1, sha256: 'x' } } : run,
        ),
      },
    } as typeof a;
    const compared = compareRuns(rowless, b);
    expect(compared.items.map((item) => [item.key, item.outcome])).toEqual(
      comparison.items.map((item) => [item.key, item.outcome]),
    );
    const item = compared.items.find((i) => i.key === 'id:b');
    expect(item).toMatchObject({ task: 'Review c.md', taskProblem: { code: 'run_dir_io' } });
    expect(compared.items.find((i) => i.key === 'id:a')).not.toHaveProperty('taskProblem');
    expect(compareText(compared, [])).toContain('tasks unreadable (compared without them): b (run_dir_io)');
    // Unreadable on both sides: no task, still compared.
    const both = compareRuns(rowless, { ...b, plan: { ...b.plan, runs: rowless.plan.runs } } as typeof b);
    expect(both.items.find((i) => i.key === 'id:b')).toMatchObject({
      task: '',
      taskProblem: { code: 'run_dir_io' },
      outcome: 'same',
    });
  });

  it('takes two failures with the same reason and code as the same, whatever their messages say', () => {
    const failedAs = (run: string, code: string, port: number): string => {
      const copy = `${run}-failed-${code}-${port}`;
      cpSync(run, copy, { recursive: true });
      const file = path.join(copy, 'results.jsonl');
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const edited = lines.map((text) => {
        const line = JSON.parse(text) as Record<string, unknown>;
        if (line.label !== 'a') return text;
        const { result: _result, answer: _answer, ...rest } = line;
        return JSON.stringify({
          ...rest,
          status: 'failed',
          reason: 'provider_error',
          error: {
            name: 'ProviderError',
            code,
            message: `openai answered HTTP 500 (http://127.0.0.1:${port}/v1)`,
            fields: {},
          },
        });
      });
      writeFileSync(file, `${edited.join('\n')}\n`);
      return copy;
    };
    const itemA = (a: string, b: string) => compareRunDirs(a, b).items.find((item) => item.key === 'id:a');
    // Only the mock server's port differs: nothing changed.
    expect(
      itemA(failedAs(runs.runA, 'server_error', 40001), failedAs(runs.runB, 'server_error', 40002)),
    ).toMatchObject({ outcome: 'same', changed: false });
    // Another error code is a change, though the reason is the same.
    expect(
      itemA(failedAs(runs.runA, 'server_error', 40003), failedAs(runs.runB, 'timeout', 40003)),
    ).toMatchObject({
      outcome: 'same',
      changed: true,
    });
  });

  it('compares the whole result, not only the part a progress line shows', () => {
    let copies = 0;
    const withResult = (run: string, result: unknown): string => {
      const copy = `${run}-result-${++copies}`;
      cpSync(run, copy, { recursive: true });
      const file = path.join(copy, 'results.jsonl');
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const edited = lines.map((text) => {
        const line = JSON.parse(text) as Record<string, unknown>;
        return line.label === 'a' ? JSON.stringify({ ...line, result }) : text;
      });
      writeFileSync(file, `${edited.join('\n')}\n`);
      return copy;
    };
    const itemA = (a: unknown, b: unknown) =>
      compareRunDirs(withResult(runs.runA, a), withResult(runs.runB, b)).items.find(
        (item) => item.key === 'id:a',
      );
    // Same summary, another answer: a change.
    expect(itemA({ summary: 'done', answer: 42 }, { summary: 'done', answer: 41 })).toMatchObject({
      outcome: 'same',
      changed: true,
    });
    // A string and a number that print alike: a change, and the outputs show which is which.
    const item = itemA({ answer: '112' }, { answer: 112 });
    expect(item).toMatchObject({ changed: true });
    expect([item?.a?.output, item?.b?.output]).toEqual(['{"answer":"112"}', '{"answer":112}']);
    expect(itemA({ answer: 'x' }, { answer: 'x' })).toMatchObject({ changed: false });
  });

  it('keeps the start of each output and a digest of the whole, which decides whether it changed', async () => {
    let copies = 0;
    const withAnswer = (run: string, answer: string): string => {
      const copy = `${run}-long-${++copies}`;
      cpSync(run, copy, { recursive: true });
      const file = path.join(copy, 'results.jsonl');
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const edited = lines.map((text) => {
        const { result: _result, ...line } = JSON.parse(text) as Record<string, unknown>;
        return line.label === 'a' ? JSON.stringify({ ...line, answer }) : text;
      });
      writeFileSync(file, `${edited.join('\n')}\n`);
      return copy;
    };
    const long = 'x'.repeat(5000);
    const a = withAnswer(runs.runA, `${long}A`);
    const b = withAnswer(runs.runB, `${long}B`);
    const item = compareRunDirs(a, b).items.find((each) => each.key === 'id:a');
    // Only the last character differs, past the excerpt: still a change.
    expect(item).toMatchObject({ outcome: 'same', changed: true });
    expect(item?.a?.output).toBe('x'.repeat(COMPARE_OUTPUT_CHARS));
    expect(item?.a?.outputChars).toBe(5001);
    expect(item?.a?.outputDigest).toBe(createHash('sha256').update(`${long}A`).digest('hex'));
    const same = compareRunDirs(a, withAnswer(runs.runB, `${long}A`)).items.find(
      (each) => each.key === 'id:a',
    );
    expect(same).toMatchObject({ changed: false });
    // `--json` prints the excerpt, not the whole output.
    const io = captureIO();
    expect(await main(['compare', a, b, '--json', '--no-tool-calls'], io)).toBe(0);
    expect(io.out()).toContain(`"outputChars": 5001`);
    expect(io.out()).not.toContain('x'.repeat(COMPARE_OUTPUT_CHARS + 1));
  });

  it('gives token, cost and latency deltas for items in both runs', () => {
    const b = comparison.items.find((item) => item.key === 'id:b');
    expect(b).toMatchObject({
      tokensDelta: expect.any(Number),
      costDeltaUsd: 0,
      latencyDeltaMs: expect.any(Number),
    });
    expect(b?.tokensDelta).toBe((b?.b?.tokens ?? 0) - (b?.a?.tokens ?? 0));
    expect(comparison.items.find((item) => item.key === 'id:d')).not.toHaveProperty('tokensDelta');
    expect(comparison.a).toMatchObject({ name: 'before', items: 3, completed: 3, simulated: true });
    expect(comparison.b).toMatchObject({ name: 'after', items: 4, completed: 4 });
  });
});

describe('gates', () => {
  it('fails when the pass rate drops by more than minDelta allows', () => {
    expect(checkGates(comparison, [parseGate('mentions')])[0]).toMatchObject({ ok: false, minDelta: 0 });
    expect(checkGates(comparison, [parseGate('mentions:-0.5')])[0]).toMatchObject({
      ok: true,
      minDelta: -0.5,
    });
    expect(checkGates(comparison, [parseGate('mentions:-0.3')])[0]?.ok).toBe(false);
  });

  it('refuses to pass a gate when the runs have no item in common', () => {
    const disjoint: RunComparison = { ...comparison, matched: 0, onlyA: 3, onlyB: 4 };
    expect(() => checkGates(disjoint, [parseGate('mentions:-1')])).toThrow(
      expect.objectContaining({
        code: 'no_matched_items',
        message: expect.stringContaining('run A: 3 items, 2 with an id ("a", "b"); run B: 4 items'),
      }),
    );
    expect(checkGates(disjoint, [])).toEqual([]);
  });

  it('refuses a malformed gate and a scorer the runs do not both declare', () => {
    expect(() => parseGate('mentions:2')).toThrow(expect.objectContaining({ code: 'invalid_gate' }));
    expect(() => parseGate('a b')).toThrow(expect.objectContaining({ code: 'invalid_gate' }));
    expect(() => checkGates(comparison, [parseGate('judge')])).toThrow(
      expect.objectContaining({ code: 'unknown_scorer', message: expect.stringContaining('(mentions)') }),
    );
  });
});

describe('diffToolCalls', () => {
  const calls = (...list: [string, string, number][]): Map<string, ToolCallCount> =>
    new Map(list.map(([name, args, count]) => [`${name}\u0000${args}`, { name, args, count }]));

  it('compares calls as a multiset: order ignored, repeats counted', () => {
    expect(
      diffToolCalls(
        calls(['grep', '{"q":"x"}', 3], ['read_file', '{"path":"a"}', 1]),
        calls(['grep', '{"q":"x"}', 1], ['bash', '{}', 1]),
      ),
    ).toEqual({
      onlyA: [
        { name: 'grep', args: '{"q":"x"}', count: 2 },
        { name: 'read_file', args: '{"path":"a"}', count: 1 },
      ],
      onlyB: [{ name: 'bash', args: '{}', count: 1 }],
      common: 1,
    });
  });
});

describe('troupe compare', () => {
  it('exits 1 when a gated scorer regressed, and prints what changed', async () => {
    const io = captureIO();
    expect(await main(['compare', runs.runA, runs.runB, '--gate', 'mentions'], io)).toBe(1);
    const out = io.out();
    expect(out).toContain('items: 3 matched (by id, else by position), 0 only in A, 1 only in B');
    expect(out).toMatch(/^mentions\s+3\/3 100\.0%\s+2\/3 66\.7%\s+-33\.3 pp\s+1\.00\s+0\.67\s+0\s+1$/m);
    expect(out).toMatch(/^b\s+completed\s+pass 1\.00 -> FAIL 0\.00\s+/m);
    expect(out).toContain('    - read_file {"path":"b.md"}');
    expect(out).toContain('    + read_file {"path":"c.md"}');
    expect(out).toContain('gate mentions:0: FAILED (pass rate 100.0% -> 66.7%, -33.3 pp, below +0.0 pp)');
  });

  it('exits 0 when the drop is within the allowed delta, or with no gate', async () => {
    expect(await main(['compare', runs.runA, runs.runB, '--gate', 'mentions:-0.5'], captureIO())).toBe(0);
    expect(await main(['compare', runs.runA, runs.runB], captureIO())).toBe(0);
  });

  it('exits 0 comparing a run with itself under a strict gate', async () => {
    const io = captureIO();
    expect(await main(['compare', runs.runA, runs.runA, '--gate', 'mentions'], io)).toBe(0);
    expect(io.out()).toContain('no item changed: same outcomes, scores, outputs and tool calls');
  });

  it('prints JSON with the gate results', async () => {
    const io = captureIO();
    expect(await main(['compare', runs.runA, runs.runB, '--json', '--gate', 'mentions:-0.5'], io)).toBe(0);
    const json = JSON.parse(io.out()) as RunComparison & { gates: { ok: boolean }[] };
    expect(json.gates).toEqual([expect.objectContaining({ scorer: 'mentions', ok: true })]);
    expect(json.items).toHaveLength(4);
  });

  it('rejects a malformed gate and an unknown scorer with a message, never passing', async () => {
    const bad = captureIO();
    expect(await main(['compare', runs.runA, runs.runB, '--gate', 'mentions:lots'], bad)).toBe(1);
    expect(bad.err()).toContain('Expected a gate `scorer[:minDelta]`');
    const unknown = captureIO();
    expect(await main(['compare', runs.runA, runs.runB, '--gate', 'judge'], unknown)).toBe(1);
    expect(unknown.err()).toContain('unknown_scorer');
  });
});
