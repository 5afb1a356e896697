/** A plan over a tasks file keeps where each row is, not the row: the run directory holds the rows once. */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { isTroupeError } from '../../src/errors.ts';
import { REPORT_TASK_CHARS } from '../../src/run-dir/constants.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { fileLines, inputsOf, rowReader } from '../../src/run-dir/task-rows.ts';
import { buildTimeline } from '../../src/run-dir/timeline.ts';
import { captureIO, readResults, tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-task-rows-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'echo.md'),
    '---\nname: echo\ndescription: Says what it was asked.\ntools: [complete_task]\n---\nAnswer briefly.\n',
  );
});
afterEach(() => cleanup());

/** A tasks file of `count` rows whose tasks are `ROW-<i>-<marker>` and a plan over it. */
function writeDataSet(count: number, marker: string, extra: readonly string[] = []): string {
  const rows = Array.from({ length: count }, (_, index) =>
    JSON.stringify({
      id: `q${index}`,
      task: `ROW-${index}-${marker}`,
      context: `context of ${index}`,
      metadata: { split: 'test', n: index },
      expected: `ROW-${index}-${marker}`,
    }),
  );
  // A byte order mark and CRLF line ends: offsets are bytes of the file as it is.
  writeFileSync(path.join(dir, 'tasks.jsonl'), `\uFEFF${rows.join('\r\n')}\r\n\r\n`);
  const plan = path.join(dir, 'plan.yaml');
  writeFileSync(
    plan,
    [
      'agent: echo',
      'tasks: tasks.jsonl',
      'agents: agents',
      `cwd: ${JSON.stringify(dir)}`,
      'provider: simulated',
      'threads: 1',
      ...extra,
      '',
    ].join('\n'),
  );
  return plan;
}

async function createRunDir(plan: string, root: string): Promise<RunDirWriter> {
  const { plan: loaded } = await loadPlan(plan, { cwd: dir });
  return RunDirWriter.create(root, resolveRunPlan(loaded, chooseProvider({ env: {} }), {}, 'simulated'));
}

describe('a plan over a tasks file', () => {
  it('holds no row text in memory after planning: only where each row is', async () => {
    const plan = writeDataSet(3, 'inmemory');
    const { plan: loaded } = await loadPlan(plan, { cwd: dir });
    const runPlan = resolveRunPlan(loaded, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    for (const held of [loaded, runPlan, writer.plan]) {
      const text = JSON.stringify(held);
      expect(text).not.toContain('ROW-');
      expect(text).not.toContain('context of');
    }
    expect(loaded.runs.map((run) => [run.index, run.label, run.source.line])).toEqual([
      [0, 'q0', 1],
      [1, 'q1', 2],
      [2, 'q2', 3],
    ]);
  });

  it('stores the rows once in the run directory and plan.json entries hold offsets into them', async () => {
    const root = path.join(dir, 'run');
    const writer = await createRunDir(writeDataSet(3, 'stored'), root);
    const planText = readFileSync(path.join(root, 'plan.json'), 'utf8');
    expect(planText).not.toContain('ROW-');
    const copy = readFileSync(path.join(root, 'tasks.jsonl'), 'utf8');
    // Once each: as the task and as the expected value.
    for (let index = 0; index < 3; index += 1) expect(copy.split(`ROW-${index}-stored`)).toHaveLength(3);

    const { plan } = readRunDir(root);
    expect(plan.taskRows).toEqual({ from: path.join(dir, 'tasks.jsonl'), file: 'tasks.jsonl' });
    expect(plan.runs).toEqual(writer.plan?.runs);
    for (const run of plan.runs) {
      expect(run.row).toBeDefined();
      expect(run).not.toHaveProperty('task');
      const bytes = readFileSync(path.join(root, 'tasks.jsonl')).subarray(
        run.row?.offset ?? 0,
        (run.row?.offset ?? 0) + (run.row?.length ?? 0),
      );
      expect(JSON.parse(bytes.toString('utf8'))).toMatchObject({ task: `ROW-${run.index}-stored` });
      expect(inputsOf(plan, root, run)).toEqual({
        task: `ROW-${run.index}-stored`,
        context: [`context of ${run.index}`],
        metadata: { split: 'test', n: run.index },
        expected: `ROW-${run.index}-stored`,
      });
    }
  });

  it('refuses to copy rows from a tasks file edited after the plan was read', async () => {
    const plan = writeDataSet(3, 'before');
    const { plan: loaded } = await loadPlan(plan, { cwd: dir });
    writeFileSync(path.join(dir, 'tasks.jsonl'), '{"task": "a shorter file"}\n');
    const runPlan = resolveRunPlan(loaded, chooseProvider({ env: {} }), {}, 'simulated');
    let caught: unknown;
    try {
      RunDirWriter.create(path.join(dir, 'run'), runPlan);
    } catch (error) {
      caught = error;
    }
    expect(isTroupeError(caught) && caught.code).toBe('tasks_changed');
    // Nothing is left behind: the directory did not exist before.
    expect(existsSync(path.join(dir, 'run'))).toBe(false);
  });

  it('runs, resumes and scores from the run directory copy: editing the tasks file changes nothing', async () => {
    const plan = writeDataSet(4, 'original', ['scorers:', '  - { name: seen, type: contains }']);
    const root = path.join(dir, 'run');
    await createRunDir(plan, root);
    // The run was created (as a fanout killed before any agent ended leaves it); then the data
    // set is edited: same lengths, other tasks and expected values.
    writeDataSet(4, 'EDITED');
    const io = captureIO();
    expect(await main(['resume', root, '--json'], io)).toBe(0);

    const lines = readResults(path.join(root, 'results.jsonl'));
    expect(lines).toHaveLength(4);
    for (const line of lines) {
      expect(line.answer).toContain(`ROW-${line.index}-original`);
      expect(line.answer).not.toContain('EDITED');
      expect(line.metadata).toEqual({ split: 'test', n: line.index });
      // Scored against the copy's expected value (the edited file's is `...-EDITED`).
      expect(line.scores?.seen).toMatchObject({ pass: true });
    }
    const journals = readFileSync(path.join(root, 'journals', `${lines[0]?.agentId}.jsonl`), 'utf8');
    expect(journals).toContain('original');
    expect(journals).not.toContain('EDITED');
  });

  it('fails only the entry whose row in tasks.jsonl cannot be read', async () => {
    const plan = writeDataSet(3, 'damaged', ['scorers:', '  - { name: seen, type: contains }']);
    const root = path.join(dir, 'run');
    const writer = await createRunDir(plan, root);
    const row = writer.plan?.runs[1]?.row;
    if (row === undefined) throw new Error('expected entry 1 to have a row');
    const copy = readFileSync(path.join(root, 'tasks.jsonl'));
    copy.fill(0x20, row.offset, row.offset + row.length);
    writeFileSync(path.join(root, 'tasks.jsonl'), copy);

    expect(await main(['resume', root, '--json'], captureIO())).toBe(1);
    const lines = readResults(path.join(root, 'results.jsonl'));
    const byIndex = new Map(lines.map((line) => [line.index, line]));
    expect(lines).toHaveLength(3);
    expect(byIndex.get(1)).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'run_dir_io' },
    });
    expect(byIndex.get(1)?.scores).toBeUndefined();
    for (const index of [0, 2]) expect(byIndex.get(index)).toMatchObject({ status: 'completed' });
    expect(byIndex.get(2)?.scores?.seen).toMatchObject({ pass: true });
  });

  it('runs a fanout from the copy and reports each row', async () => {
    const plan = writeDataSet(3, 'fanned');
    const root = path.join(dir, 'run');
    const io = captureIO();
    expect(await main(['fanout', plan, '--out', root, '--json'], io)).toBe(0);
    expect(existsSync(path.join(root, 'tasks.jsonl'))).toBe(true);
    const lines = readResults(path.join(root, 'results.jsonl'));
    expect(lines.map((line) => line.label).sort()).toEqual(['q0', 'q1', 'q2']);
    for (const line of lines) expect(line.answer).toContain(`ROW-${line.index}-fanned`);
    const report = captureIO();
    expect(await main(['report', root], report)).toBe(0);
    expect(report.out()).toContain('ROW-2-fanned');
  });
});

describe('a row edited to the same length', () => {
  it('is refused with tasks_changed between reading the plan and creating the run directory', async () => {
    const plan = writeDataSet(3, 'before');
    const { plan: loaded } = await loadPlan(plan, { cwd: dir });
    // Every row keeps its length: only the hash recorded at planning time tells them apart.
    writeDataSet(3, 'BEFORE');
    const runPlan = resolveRunPlan(loaded, chooseProvider({ env: {} }), {}, 'simulated');
    let caught: unknown;
    try {
      RunDirWriter.create(path.join(dir, 'run'), runPlan);
    } catch (error) {
      caught = error;
    }
    expect(isTroupeError(caught) && caught.code).toBe('tasks_changed');
    expect(existsSync(path.join(dir, 'run'))).toBe(false);
  });

  it("fails its entry with tasks_changed when the run directory's copy is edited before resume", async () => {
    const root = path.join(dir, 'run');
    await createRunDir(writeDataSet(3, 'copied'), root);
    const copy = path.join(root, 'tasks.jsonl');
    writeFileSync(copy, readFileSync(copy, 'utf8').replaceAll('ROW-1-copied', 'ROW-1-COPIED'));

    expect(await main(['resume', root, '--json'], captureIO())).toBe(1);
    const byIndex = new Map(readResults(path.join(root, 'results.jsonl')).map((line) => [line.index, line]));
    expect(byIndex.get(1)).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'tasks_changed' },
    });
    for (const index of [0, 2]) expect(byIndex.get(index)).toMatchObject({ status: 'completed' });
  });

  it('is read as it is from a run directory whose plan.json records no hashes (written before them)', async () => {
    const root = path.join(dir, 'run');
    await createRunDir(writeDataSet(2, 'unhashed'), root);
    const { plan: written } = readRunDir(root);
    expect(written.runs.every((run) => typeof run.row?.hash === 'string')).toBe(true);
    const old = {
      ...written,
      runs: written.runs.map((run) =>
        run.row === undefined ? run : { ...run, row: { offset: run.row.offset, length: run.row.length } },
      ),
    };
    writeFileSync(path.join(root, 'plan.json'), JSON.stringify(old, null, 2));
    const copy = path.join(root, 'tasks.jsonl');
    writeFileSync(copy, readFileSync(copy, 'utf8').replaceAll('unhashed', 'UNHASHED'));

    expect(await main(['resume', root, '--json'], captureIO())).toBe(0);
    for (const line of readResults(path.join(root, 'results.jsonl')))
      expect(line.answer).toContain(`ROW-${line.index}-UNHASHED`);
  });
});

describe('a tasks file line over the bound', () => {
  it('is a plan problem naming the file, its line and the bound, and no longer line is held', async () => {
    const plan = writeDataSet(3, 'bounded');
    const file = path.join(dir, 'tasks.jsonl');
    const rows = readFileSync(file, 'utf8').split('\r\n');
    // A line is its bytes up to `\n`: line 1's byte order mark and `\r` count. It is the longest.
    const limit = Buffer.byteLength(`${rows[0]}\r`);
    // Line 2 one byte over the bound (its own bytes and `\r`), lines 1 and 3 within it.
    rows[1] = (rows[1] ?? '').padEnd(limit, ' ');
    writeFileSync(file, rows.join('\r\n'));
    let caught: unknown;
    try {
      await loadPlan(plan, { cwd: dir, maxTaskLineBytes: limit });
    } catch (error) {
      caught = error;
    }
    expect(isTroupeError(caught) && caught.code).toBe('invalid_plan');
    const problems = isTroupeError(caught)
      ? (caught.fields.problems as { file: string; line: number; message: string }[])
      : [];
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file, line: 2 });
    expect(problems[0]?.message).toContain(`at most ${limit} bytes`);
    expect(problems[0]?.message).toContain('--max-task-line-bytes');
    // Raised, the same file loads.
    const { plan: loaded } = await loadPlan(plan, { cwd: dir, maxTaskLineBytes: limit + 1 });
    expect(loaded.runs).toHaveLength(3);
  });

  it('is skipped across chunks without being kept, and the lines after it keep their offsets', async () => {
    const file = path.join(dir, 'lines.txt');
    const long = 'x'.repeat(1_500_000); // crosses a 1 MiB chunk
    writeFileSync(file, `12345\n123456\n${long}\nlast`);
    const { openSync, closeSync } = await import('node:fs');
    const fd = openSync(file, 'r');
    try {
      const lines = [...fileLines(fd, 5)].map(({ number, offset, length, text, bytes, tooLong }) => ({
        number,
        offset,
        length,
        text,
        bytes: bytes.length,
        tooLong: tooLong ?? false,
      }));
      expect(lines).toEqual([
        { number: 1, offset: 0, length: 5, text: '12345', bytes: 5, tooLong: false },
        { number: 2, offset: 6, length: 6, text: '', bytes: 0, tooLong: true },
        { number: 3, offset: 13, length: 1_500_000, text: '', bytes: 0, tooLong: true },
        { number: 4, offset: 1_500_014, length: 4, text: 'last', bytes: 4, tooLong: false },
      ]);
    } finally {
      closeSync(fd);
    }
  });
});

describe('the report of a tasks-file run', () => {
  it("keeps the start of each entry's task, not the whole of it, and troupe show the whole", async () => {
    const plan = writeDataSet(3, 'reported');
    const long = (index: number) => `ROW-${index}-reported ${'long task text '.repeat(400)}`;
    const rows = [0, 1, 2].map((index) => JSON.stringify({ id: `q${index}`, task: long(index) }));
    writeFileSync(path.join(dir, 'tasks.jsonl'), `${rows.join('\n')}\n`);
    const root = path.join(dir, 'run');
    await createRunDir(plan, root);

    const agents = buildTimeline(readRunDir(root)).agents;
    expect(agents).toHaveLength(3);
    for (const agent of agents) {
      expect(agent.task.length).toBeLessThanOrEqual(REPORT_TASK_CHARS + 1);
      expect(agent.task.startsWith(`ROW-${agent.index}-reported long task text`)).toBe(true);
      expect(agent.task.endsWith('…')).toBe(true);
    }
    const whole = buildTimeline(readRunDir(root), { wholeTasks: true }).agents;
    for (const agent of whole) expect(agent.task).toBe(long(agent.index ?? -1));
  });

  it("is still made when a row of the run directory's copy was edited, and says why its task is missing", async () => {
    const root = path.join(dir, 'run');
    expect(await main(['fanout', writeDataSet(3, 'edited', []), '--out', root, '--json'], captureIO())).toBe(
      0,
    );
    const copy = path.join(root, 'tasks.jsonl');
    writeFileSync(copy, readFileSync(copy, 'utf8').replaceAll('ROW-1-edited', 'ROW-1-EDITED'));
    const report = captureIO();
    expect(await main(['report', root], report)).toBe(0);
    const agents = buildTimeline(readRunDir(root)).agents;
    expect(agents.find((agent) => agent.index === 1)?.task).toContain('task unreadable');
    expect(agents.find((agent) => agent.index === 2)?.task).toContain('ROW-2-edited');
  });
});

describe("a report's reader of a run directory's rows", () => {
  it('reads every row through the one descriptor it opened at the first', async () => {
    const root = path.join(dir, 'run');
    await createRunDir(writeDataSet(3, 'held'), root);
    const { plan } = readRunDir(root);
    const reader = rowReader(plan, root);
    const [first, second, third] = plan.runs;
    if (first === undefined || second === undefined || third === undefined) throw new Error('3 runs');
    expect(reader.inputsOf(first).task).toBe('ROW-0-held');
    // A new file in its place: a reader that opened the file for each row would read that one.
    const copy = path.join(root, 'tasks.jsonl');
    const replaced = path.join(root, 'tasks.jsonl.new');
    writeFileSync(replaced, readFileSync(copy, 'utf8').replaceAll('-held', '-HELD'));
    renameSync(replaced, copy);
    expect(() => inputsOf(plan, root, second)).toThrow(/edited since/);
    expect(reader.inputsOf(second).task).toBe('ROW-1-held');
    expect(reader.inputsOf(third).task).toBe('ROW-2-held');
    reader.close();
    // Closed, it opens the file again.
    expect(() => reader.inputsOf(third)).toThrow(/edited since/);
    reader.close();
  });
});

describe('troupe replay of a tasks-file run', () => {
  it('gives the replay its own copy of the recorded rows', async () => {
    const recorded = path.join(dir, 'run');
    expect(
      await main(['fanout', writeDataSet(2, 'replayed'), '--out', recorded, '--json'], captureIO()),
    ).toBe(0);
    const out = path.join(dir, 'replay');
    expect(await main(['replay', recorded, '--out', out, '--json'], captureIO())).toBe(0);
    const { plan } = readRunDir(out);
    expect(plan.taskRows).toEqual({ from: path.join(dir, 'tasks.jsonl'), file: 'tasks.jsonl' });
    expect(readFileSync(path.join(out, 'tasks.jsonl'), 'utf8')).toBe(
      readFileSync(path.join(recorded, 'tasks.jsonl'), 'utf8'),
    );
    const lines = readResults(path.join(out, 'results.jsonl'));
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.answer).toContain(`ROW-${line.index}-replayed`);
  });
});

describe('troupe score --plan over a tasks-file run', () => {
  it("scores with the other plan's expected values and records where they came from", async () => {
    const plan = writeDataSet(3, 'scored', ['scorers:', '  - { name: seen, type: contains }']);
    const root = path.join(dir, 'run');
    expect(await main(['fanout', plan, '--out', root, '--json'], captureIO())).toBe(0);
    const rows = [0, 1, 2].map((index) =>
      JSON.stringify({ id: `q${index}`, task: 'other', expected: index === 1 ? 'NOPE' : `ROW-${index}` }),
    );
    writeFileSync(path.join(dir, 'other.jsonl'), `${rows.join('\n')}\n`);
    const other = path.join(dir, 'other.yaml');
    writeFileSync(
      other,
      'agent: echo\ntasks: other.jsonl\nagents: agents\nscorers:\n  - { name: again, type: contains }\n',
    );
    expect(await main(['score', root, '--plan', other, '--json'], captureIO())).toBe(0);

    const lines = readResults(path.join(root, 'results.jsonl'));
    const passed = new Map(lines.map((line) => [line.label, line.scores?.again?.pass]));
    expect(Object.fromEntries(passed)).toEqual({ q0: true, q1: false, q2: true });
    const { plan: rescored } = readRunDir(root);
    expect(rescored.taskRows?.expectedFrom).toBe(other);
    expect(rescored.runs.map((run) => inputsOf(rescored, root, run).expected)).toEqual([
      'ROW-0',
      'NOPE',
      'ROW-2',
    ]);
    // The run's own copy is left as it was.
    expect(readFileSync(path.join(root, 'tasks.jsonl'), 'utf8')).toContain('"expected":"ROW-1-scored"');
  });
});

describe('a run directory written before tasks.jsonl', () => {
  it('resumes and scores from the rows inline in plan.json', async () => {
    const plan = writeDataSet(2, 'inline', ['scorers:', '  - { name: seen, type: contains }']);
    const root = path.join(dir, 'run');
    await createRunDir(plan, root);
    // What older versions wrote: every row's inputs inline in its entry, no taskRows, no copy.
    const { plan: written } = readRunDir(root);
    const old = {
      ...written,
      taskRows: undefined,
      runs: written.runs.map(({ row: _row, ...run }) => ({
        ...run,
        task: `OLD-${run.index}`,
        context: [],
        metadata: { old: true },
        expected: `OLD-${run.index}`,
      })),
    };
    writeFileSync(path.join(root, 'plan.json'), JSON.stringify(old, null, 2));
    writeFileSync(path.join(root, 'tasks.jsonl'), 'not rows any more\n');

    expect(await main(['resume', root, '--json'], captureIO())).toBe(0);
    const lines = readResults(path.join(root, 'results.jsonl'));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.answer).toContain(`OLD-${line.index}`);
      expect(line.metadata).toEqual({ old: true });
      expect(line.scores?.seen).toMatchObject({ pass: true });
    }
  });
});

describe('fileLines', () => {
  it('gives each line its byte offset and length across multi-byte characters and chunk ends', async () => {
    const file = path.join(dir, 'lines.txt');
    const long = 'é'.repeat(700_000); // 1.4 MB: crosses a 1 MiB chunk
    writeFileSync(file, `ä\n\n${long}\nlast`);
    const { openSync, closeSync } = await import('node:fs');
    const fd = openSync(file, 'r');
    try {
      const lines = [...fileLines(fd)].map(({ number, offset, length, text }) => ({
        number,
        offset,
        length,
        text: text.length > 10 ? `${text.slice(0, 2)}..${text.length}` : text,
      }));
      expect(lines).toEqual([
        { number: 1, offset: 0, length: 2, text: 'ä' },
        { number: 2, offset: 3, length: 0, text: '' },
        { number: 3, offset: 4, length: 1_400_000, text: 'éé..700000' },
        { number: 4, offset: 1_400_005, length: 4, text: 'last' },
      ]);
    } finally {
      closeSync(fd);
    }
  });
});
