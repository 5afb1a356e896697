/**
 * `troupe replay`: a recorded run directory (or journal) runs again into a new run directory, its
 * tool calls answered from the recording. The replay killed mid-way (SIGKILL while a live
 * read-only call blocks on a FIFO) resumes with `troupe resume` and goes on from where its
 * recording stood. Side effects are counted by test/fixtures/replay/effect-tools.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { INTERRUPTED_TOOL_RESULT } from '../../src/journal/constants.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { PROVIDER_ENV, Project } from '../fixtures/cli/cli-helpers.ts';
import { effects } from '../fixtures/replay/effect-tools.ts';
import { captureIO, readResults, startCli, tempDir, waitUntil } from '../run-dir/helpers.ts';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/replay');
const posix = process.platform !== 'win32';

let dir: string;
let cleanup: () => void;

const WRITER = (body: string) => `---
name: writer
description: Follows the plan in its task.
tools: [look, write_note, read_file, read_raw, complete_task]
completionRequirement:
  tool: complete_task
---
${body}
`;

beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-replay-cli-'));
  writeFileSync(path.join(dir, '.git'), '');
  for (const [name, text] of Object.entries({
    'agents/writer.md': WRITER('You follow your plan.'),
    // v2 reads a file between the two looks: a new read-only call, which runs live.
    'agents-v2/writer.md': WRITER('You follow your plan.\ndo#0.5: read_raw {"path":"slow.md"}'),
    'slow.md': 'slow\n',
    'plan.yaml': [
      'agent: writer',
      'agents: agents',
      'cwd: .',
      'threads: 1',
      `provider: { module: ${JSON.stringify(path.join(fixtures, 'plan-provider.ts'))} }`,
      `toolModules: [{ module: ${JSON.stringify(path.join(fixtures, 'effect-tools.ts'))}, export: effectTools }]`,
      'runs:',
      '  - id: one',
      `    task: ${JSON.stringify('do: look {"value":"x"}\ndo: look {"value":"x"}\ndo: write_note {"value":"n1"}')}`,
      '  - id: two',
      `    task: ${JSON.stringify('do: write_note {"value":"n2"}')}`,
    ].join('\n'),
  })) {
    const file = path.join(dir, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
});
afterEach(() => cleanup());

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

function journals(runDir: string): Map<string, AuditEvent[]> {
  const byAgent = new Map<string, AuditEvent[]>();
  for (const file of readdirSync(path.join(runDir, 'journals')))
    byAgent.set(file.replace(/\.jsonl$/, ''), readJournal(path.join(runDir, 'journals', file)).events);
  return byAgent;
}

async function record(): Promise<string> {
  const out = path.join(dir, 'recorded');
  const io = captureIO();
  expect(await main(['fanout', path.join(dir, 'plan.yaml'), '--out', out], io), io.out()).toBe(0);
  expect(effects(dir)).toHaveLength(4);
  return out;
}

/** The CLI in this process (paths are absolute: agents run in worker threads, no chdir). */
async function cli(args: string[]): Promise<{ code: number; out: string }> {
  const io = captureIO();
  const code = await main(args, io);
  return { code, out: io.out() };
}

describe('troupe replay RUN_DIR', () => {
  it('with the same version reproduces every outcome into a new run directory, and runs no tool', async () => {
    const recorded = await record();
    const out = path.join(dir, 'replayed');
    const { code, out: text } = await cli(['replay', recorded, '--out', out]);
    expect(code).toBe(0);
    expect(text).toContain(`replaying ${recorded}, 2 agent(s)`);
    expect(text).toContain(
      `replay of ${recorded}: 4 tool call(s) answered from the recording, 0 run live (read-only), 0 refused`,
    );
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.replay).toEqual({ of: recorded, calls: { recorded: 4, live: 0, refused: 0 } });
    expect(effects(dir)).toHaveLength(4);
    const byLabel = (runDir: string) =>
      Object.fromEntries(
        readResults(path.join(runDir, 'results.jsonl')).map((line) => [
          line.label,
          [line.status, line.result],
        ]),
      );
    expect(byLabel(out)).toEqual(byLabel(recorded));
    const plan = JSON.parse(readFileSync(path.join(out, 'plan.json'), 'utf8')) as RunPlan;
    expect(plan.replay?.of).toBe(recorded);
    expect(plan.runs.map((run) => run.label)).toEqual(['one', 'two']);
    for (const events of journals(out).values()) {
      expect(ofType(events, 'Started')[0]?.replay?.of).toBe(recorded);
      for (const result of ofType(events, 'ToolResult'))
        expect(result.replay).toBe(result.name === 'complete_task' ? undefined : 'recorded');
    }
    // Compared with the recording: nothing changed.
    expect((await cli(['compare', recorded, out, '--gate', 'x'])).code).toBe(1); // no such scorer
    expect(await cli(['compare', recorded, out])).toMatchObject({ code: 0 });
  });

  it('with --agent naming no agent: unknown_agent lists the names there are and suggests a close one', async () => {
    const recorded = await record();
    const io = captureIO();
    expect(
      await main(['replay', recorded, '--agent', 'writr', '--out', path.join(dir, 'replayed')], io),
    ).toBe(1);
    expect(io.err()).toContain('unknown_agent');
    expect(io.err()).toContain('(did you mean `writer`?)');
    expect(io.err()).toMatch(/available: writer\b/);
  });

  it('with --agent FILE runs the new version: its new read-only call runs live, the recorded ones do not', async () => {
    const recorded = await record();
    const out = path.join(dir, 'replayed');
    expect(
      (await cli(['replay', recorded, '--agent', path.join(dir, 'agents-v2/writer.md'), '--out', out])).code,
    ).toBe(0);
    expect(effects(dir)).toHaveLength(4);
    const one = [...journals(out).values()].find((events) =>
      ofType(events, 'Started')[0]?.task.includes('n1'),
    );
    expect(ofType(one ?? [], 'ToolResult').map((result) => [result.name, result.replay])).toEqual([
      ['look', 'recorded'],
      ['read_raw', 'live'],
      ['look', 'recorded'],
      ['write_note', 'recorded'],
      ['complete_task', undefined],
    ]);
    const plan = JSON.parse(readFileSync(path.join(out, 'plan.json'), 'utf8')) as RunPlan;
    expect(plan.replay?.agent).toBe(path.join(dir, 'agents-v2/writer.md'));
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.replay?.calls).toEqual({ recorded: 4, live: 2, refused: 0 });
  });

  it.runIf(posix)(
    'killed mid-way, resumes with troupe resume: recorded calls stay answered from the recording, in order',
    async () => {
      const recorded = await record();
      const out = path.join(dir, 'replayed');
      const fifo = path.join(dir, 'slow.md');
      rmSync(fifo);
      expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
      const child = startCli(
        [
          'replay',
          recorded,
          '--agent',
          path.join(dir, 'agents-v2/writer.md'),
          '--out',
          out,
          '--json',
          '--concurrency',
          '1',
        ],
        { cwd: dir },
      );
      await waitUntil(
        () => child.stdout().includes('"tool":"read_raw"'),
        'the replay starts its live read of the FIFO',
        2400,
      );
      await untilBlockedOnFifo(child.child.pid);
      child.child.kill('SIGKILL');
      expect(await child.exited).toBe('SIGKILL');
      rmSync(fifo);
      writeFileSync(fifo, 'slow\n');

      const resumed = await cli(['resume', out]);
      expect(resumed.code).toBe(0);
      expect(resumed.out).toContain(`replaying ${recorded}`);
      expect(effects(dir)).toHaveLength(4);
      const one = [...journals(out).values()].find((events) =>
        ofType(events, 'Started')[0]?.task.includes('n1'),
      );
      const events = one ?? [];
      expect(ofType(events, 'Resumed')).toHaveLength(1);
      const results = ofType(events, 'ToolResult');
      expect(results.map((result) => [result.name, result.replay ?? result.text])).toEqual([
        ['look', 'recorded'],
        ['read_raw', INTERRUPTED_TOOL_RESULT],
        ['look', 'recorded'],
        ['write_note', 'recorded'],
        ['complete_task', 'Task complete: your result was delivered.'],
      ]);
      // The look after the restart got the second recorded look, not the first again.
      expect(results.filter((result) => result.name === 'look').map((result) => result.text)).toEqual([
        'saw x (look #1)',
        'saw x (look #2)',
      ]);
      expect(readResults(path.join(out, 'results.jsonl')).map((line) => line.status)).toEqual([
        'completed',
        'completed',
      ]);
    },
  );
});

describe('troupe replay RUN_DIR with a damaged recording', () => {
  it('refuses a recording edited in place (valid JSON, broken hash chain), naming the line and seq', async () => {
    const recorded = await record();
    const [line] = readResults(path.join(recorded, 'results.jsonl')).filter(
      (result) => result.label === 'one',
    );
    const journal = path.join(recorded, 'journals', `${line?.agentId}.jsonl`);
    const lines = readFileSync(journal, 'utf8').split('\n');
    const at = lines.findIndex((text) => text.includes('"type":"ToolResult"'));
    lines[at] = (lines[at] ?? '').replace('"text":"', '"text":"edited: ');
    writeFileSync(journal, lines.join('\n'));
    const out = path.join(dir, 'replayed');
    const { code } = await cli(['replay', recorded, '--out', out]);
    expect(code).toBe(1);
    const byLabel = new Map(
      readResults(path.join(out, 'results.jsonl')).map((result) => [result.label, result]),
    );
    expect(byLabel.get('one')).toMatchObject({
      status: 'failed',
      error: {
        code: 'replay_journal_damaged',
        message: `Expected an intact recorded journal, but ${journal} is damaged at line ${at + 1} (seq ${at}): Event ${at} (ToolResult) does not hash to its recorded hash; check it with \`troupe verify ${journal}\``,
      },
    });
    expect(byLabel.get('two')?.status).toBe('completed');
    // Nothing of the edited recording was served or run again.
    expect(effects(dir)).toHaveLength(4);
  });
});

describe('troupe replay RUN_DIR with an entry whose journal is missing', () => {
  it('replays the entry with nothing recorded, with a note on stderr and a count in the closing line', async () => {
    const recorded = await record();
    const [two] = readResults(path.join(recorded, 'results.jsonl')).filter(
      (result) => result.label === 'two',
    );
    const missing = path.join(recorded, 'journals', `${two?.agentId}.jsonl`);
    rmSync(missing);
    const out = path.join(dir, 'replayed');
    const io = captureIO();
    await main(['replay', recorded, '--out', out], io);
    expect(io.err()).toBe(
      `note: entry 1 (id two) has no recorded journal at ${missing}; it replays with nothing recorded (its read-only calls run live, the others are refused)\n`,
    );
    expect(io.out()).toContain(
      `replay of ${recorded}: 3 tool call(s) answered from the recording, 0 run live (read-only), 1 refused; 1 entry had no recorded journal (replayed with nothing recorded)`,
    );
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.replay).toEqual({
      of: recorded,
      calls: { recorded: 3, live: 0, refused: 1 },
      unrecorded: 1,
    });
    // The entry still ran; its write was refused, not run.
    expect(
      readResults(path.join(out, 'results.jsonl'))
        .map((result) => result.label)
        .sort(),
    ).toEqual(['one', 'two']);
    expect(effects(dir)).toHaveLength(4);
  });
});

describe('troupe replay JOURNAL', () => {
  let project: Project;
  let saved: Record<string, string | undefined>;
  beforeEach(() => {
    project = new Project({ 'a.md': 'alpha\n', 'b.md': 'beta\n' });
    saved = Object.fromEntries(['HOME', ...PROVIDER_ENV].map((name) => [name, process.env[name]]));
    for (const name of PROVIDER_ENV) delete process.env[name];
    process.env.HOME = project.home;
  });
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    project.remove();
  });

  it('replays a `troupe run` journal into a run directory: its reads come from the recording', async () => {
    const journal = project.path('run.jsonl');
    const run = await cli([
      'run',
      'reader',
      '--task',
      'Read a.md and b.md',
      '--cwd',
      project.root,
      '--journal',
      journal,
    ]);
    expect(run.code).toBe(0);
    // The files are gone: only the recording can answer the reads now.
    rmSync(project.path('a.md'));
    rmSync(project.path('b.md'));
    const out = project.path('replayed');
    expect((await cli(['replay', journal, '--out', out])).code).toBe(0);
    const plan = JSON.parse(readFileSync(path.join(out, 'plan.json'), 'utf8')) as RunPlan;
    expect(plan.replay).toEqual({ of: journal, journals: [journal] });
    expect(plan.cwd).toBe(project.root);
    const [line] = readResults(path.join(out, 'results.jsonl'));
    const recorded = readJournal(journal).events.findLast((event) => event.type === 'Completed');
    expect(line).toMatchObject({
      status: 'completed',
      answer: recorded?.type === 'Completed' && recorded.answer,
    });
    const events = journals(out).get(line?.agentId ?? '') ?? [];
    expect(ofType(events, 'ToolResult').map((result) => [result.name, result.ok, result.replay])).toEqual([
      ['read_file', true, 'recorded'],
      ['read_file', true, 'recorded'],
      ['complete_task', true, undefined],
    ]);
  });
});

/**
 * Resolves once a thread of process `pid` is blocked opening a FIFO (its `wchan` reads
 * `wait_for_partner` on Linux): the live read is inside its open, and stays there. Where /proc is
 * missing it resolves at once.
 */
async function untilBlockedOnFifo(pid: number | undefined): Promise<void> {
  const tasks = `/proc/${pid}/task`;
  if (pid === undefined || !existsSync(tasks)) return;
  for (let attempt = 0; attempt < 3000; attempt += 1) {
    for (const tid of readdirSync(tasks)) {
      try {
        if (readFileSync(`${tasks}/${tid}/wchan`, 'utf8').trim() === 'wait_for_partner') return;
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    await delay(10);
  }
  throw new Error(`process ${pid} never blocked opening the FIFO`);
}
