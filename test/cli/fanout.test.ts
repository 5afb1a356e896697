import { EventEmitter } from 'node:events';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { executeSession } from '../../src/run-dir/execute.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider, withEnvironmentBaseURL } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { captureIO, journalTypes, readResults, startCli, tempDir, waitUntil } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  writeFileSync(path.join(dir, 'b.md'), '# B\nBeta.\n');
});
afterEach(() => cleanup());

function writePlan(lines: readonly string[]): string {
  const file = path.join(dir, 'plan.yaml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

function summaryOf(runDir: string): RunSummary {
  return JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as RunSummary;
}

describe('troupe fanout', () => {
  it('runs every agent of a plan, writing results, journals and the summary, with plain output off a TTY', async () => {
    writePlan([
      'threads: 1',
      'runs:',
      '  - agent: worker',
      '    task: Review a.md',
      '  - agent: worker',
      '    task: Review b.md and a.md',
      '  - agent: general-purpose',
      '    task: Summarise b.md',
    ]);
    const run = startCli(['fanout', 'plan.yaml'], { cwd: dir });
    expect(await run.exited).toBe(0);
    const stdout = run.stdout();
    const runsDir = path.join(dir, '.troupe', 'runs');
    const [name] = readdirSync(runsDir);
    expect(name).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    const runDir = path.join(runsDir, name ?? '');
    const prefix = (name ?? '').slice(-6);

    const results = readResults(path.join(runDir, 'results.jsonl'));
    expect(results.map((r) => [r.index, r.agentId, r.status]).sort()).toEqual([
      [0, `${prefix}-0`, 'completed'],
      [1, `${prefix}-1`, 'completed'],
      [2, `${prefix}-2`, 'completed'],
    ]);
    for (const result of results) {
      expect(journalTypes(path.join(runDir, 'journals', `${result.agentId}.jsonl`)).at(-1)).toBe('Completed');
      expect(result.usage.inputTokens).toBeGreaterThan(0);
    }
    const summary = summaryOf(runDir);
    expect(summary.counts).toMatchObject({ planned: 3, completed: 3, failed: 0, notRun: 0 });
    expect(summary.simulated).toBe(true);
    expect(summary.complete).toBe(true);
    expect(JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8'))).toMatchObject({
      runId: name,
      provider: { name: 'simulated', simulated: true },
      runs: [{ agentId: `${prefix}-0`, task: 'Review a.md' }, {}, {}],
    });

    // Off a TTY: no escape sequences, one line per event, the simulated model announced.
    expect(stdout).not.toContain('\x1b[');
    expect(stdout).toContain('troupe: using the simulated model');
    expect(stdout).toContain(`run dir: ${runDir}`);
    for (const result of results) expect(stdout).toMatch(new RegExp(`completed +${result.agentId} `));
    expect(stdout).toMatch(/finished: 3 of 3 completed, 0 failed/);
    expect(run.stderr()).toBe('');
  });

  it('prints JSONL events with --json, from the run header to the summary', async () => {
    const plan = writePlan([
      'cwd: .',
      'threads: 1',
      'agent: worker',
      'runs:',
      '  - task: Review a.md',
      '  - task: Review b.md',
    ]);
    const io = captureIO();
    const out = path.join(dir, 'run');
    expect(await main(['fanout', plan, '--json', '--out', out], io)).toBe(0);
    const events = io
      .out()
      .trimEnd()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            type: string;
            simulated?: boolean;
            notice?: string;
            line?: { status: string };
          },
      );
    expect(events[0]).toMatchObject({
      type: 'run',
      simulated: true,
      notice: expect.stringContaining('simulated model'),
    });
    expect(events.at(-1)?.type).toBe('summary');
    expect(events.filter((event) => event.type === 'ended').map((event) => event.line?.status)).toEqual([
      'completed',
      'completed',
    ]);
    expect(events.some((event) => event.type === 'tool')).toBe(true);
    expect(readResults(path.join(out, 'results.jsonl'))).toHaveLength(2);
  });

  it('warns at the start when plan entries share an id', async () => {
    const plan = writePlan([
      'cwd: .',
      'threads: 1',
      'agent: worker',
      'runs:',
      '  - { id: dup, task: Review a.md }',
      '  - { id: one, task: Review b.md }',
      '  - { id: dup, task: Review b.md }',
    ]);
    const io = captureIO();
    expect(await main(['fanout', plan, '--json', '--out', path.join(dir, 'dups')], io)).toBe(0);
    const [header] = io
      .out()
      .split('\n', 1)
      .map((line) => JSON.parse(line) as { type: string; notices: string[] });
    expect(header).toMatchObject({ type: 'run' });
    expect(header?.notices).toEqual([
      '1 id(s) name more than one plan entry: `dup` (entries 0, 2); troupe show needs their agent ids, and compare matches the n-th with the n-th',
    ]);
  });

  it('says the simulated model was chosen, not that no key is set, after --provider simulated', async () => {
    const plan = writePlan(['cwd: .', 'threads: 1', 'agent: worker', 'runs:', '  - task: Review a.md']);
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-test-not-used-by-simulated';
    try {
      const io = captureIO();
      const out = path.join(dir, 'chosen');
      expect(await main(['fanout', plan, '--provider', 'simulated', '--out', out], io)).toBe(0);
      expect(io.out()).toContain(
        "troupe: using the simulated model: --provider simulated was given, so answers are canned, not a real model's",
      );
      expect(io.out()).not.toContain('no API key is set');
      const report = path.join(dir, 'chosen.html');
      expect(await main(['report', out, '--html', report], captureIO())).toBe(0);
      expect(readFileSync(report, 'utf8')).toContain('--provider simulated was given');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });

  it('fails a bad plan before anything runs, naming file:line:column and the field', async () => {
    const plan = writePlan([
      'runs:',
      '  - agent: worker',
      '    task: 42',
      '  - agent: nobody',
      '    task: ok',
    ]);
    const io = captureIO();
    const out = path.join(dir, 'run');
    expect(await main(['fanout', plan, '--out', out], io)).toBe(1);
    const lines = io.err().trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /plan\.yaml:3:11: runs\[0\]\.task: expected a non-empty string, got `42` \(number\)$/,
    );
    expect(lines[1]).toMatch(
      /plan\.yaml:4:12: runs\[1\]\.agent: expected the name of an available agent .*got `"nobody"`/,
    );
    expect(lines[2]).toBe('troupe: 2 problem(s) in the plan; nothing was run');
    expect(io.out()).toBe('');
    expect(existsSync(out)).toBe(false);
  });

  it('on Ctrl-C cancels the running agents, keeps finished results and writes the summary', async () => {
    // The second agent waits for an instruction nobody sends, so the run is mid-way until SIGINT;
    // the third one is still queued behind it (concurrency 1).
    writePlan([
      'threads: 1',
      'concurrency: 1',
      'agent: worker',
      'runs:',
      '  - task: Review a.md',
      '  - task: Review b.md, then wait for an instruction.',
      '  - task: Review a.md again',
    ]);
    const out = path.join(dir, 'run');
    const run = startCli(['fanout', 'plan.yaml', '--out', out], { cwd: dir });
    const results = path.join(out, 'results.jsonl');
    await waitUntil(
      () =>
        readResults(results).length === 1 &&
        readdirSync(path.join(out, 'journals')).some((f) =>
          journalTypes(path.join(out, 'journals', f)).includes('Waiting'),
        ),
      'the first agent finished and the second one waits',
    );
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(130);
    const lines = readResults(results);
    // The third one never started: it has no line (resume starts it), and no agent was spawned for it.
    expect(lines.map((line) => [line.index, line.status, line.reason ?? null])).toEqual([
      [0, 'completed', null],
      [1, 'failed', 'cancelled'],
    ]);
    const summary = summaryOf(out);
    expect(summary).toMatchObject({ interrupted: true, complete: false });
    expect(summary.counts).toMatchObject({ completed: 1, failed: 1, cancelled: 1, notRun: 1 });
    expect(run.stdout()).toContain('1 not run');
    expect(run.stdout()).toContain('cancelling the running agents');
    expect(run.stdout()).toContain(`troupe resume ${out}`);
  });

  it('a second Ctrl-C writes the summary and exits at once with code 130', async () => {
    const { plan, definitions } = await loadPlan(
      writePlan([
        'cwd: .',
        'threads: 1',
        'agent: worker',
        'runs:',
        '  - task: Review a.md, then wait for an instruction.',
      ]),
    );
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    const signals = new EventEmitter();
    const exits: number[] = [];
    const session = executeSession({
      plan: runPlan,
      writer,
      work: runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
      kind: 'fanout',
      definitions,
      json: false,
      tty: false,
      io: captureIO(),
      signals,
      exit: (code) => exits.push(code),
    });
    const journal = path.join(writer.paths.journals, `${runPlan.runs[0]?.agentId}.jsonl`);
    await waitUntil(() => journalTypes(journal).includes('Waiting'), 'the agent waits');
    signals.emit('SIGINT');
    signals.emit('SIGINT');
    expect(exits).toEqual([130]);
    expect(summaryOf(writer.paths.root)).toMatchObject({ interrupted: true });
    expect((await session).exitCode).toBe(130);
    expect(signals.listenerCount('SIGINT')).toBe(0);
  });

  it('SIGTERM (kill, timeout, docker stop) cancels like Ctrl-C, writes the summary and exits 143', async () => {
    const { plan, definitions } = await loadPlan(
      writePlan([
        'cwd: .',
        'threads: 1',
        'agent: worker',
        'runs:',
        '  - task: Review a.md, then wait for an instruction.',
      ]),
    );
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run-term'), runPlan);
    const signals = new EventEmitter();
    const io = captureIO();
    const session = executeSession({
      plan: runPlan,
      writer,
      work: runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
      kind: 'fanout',
      definitions,
      json: false,
      tty: false,
      io,
      signals,
      exit: () => {
        throw new Error('a single SIGTERM must not exit at once');
      },
    });
    const journal = path.join(writer.paths.journals, `${runPlan.runs[0]?.agentId}.jsonl`);
    await waitUntil(() => journalTypes(journal).includes('Waiting'), 'the agent waits');
    signals.emit('SIGTERM');
    expect((await session).exitCode).toBe(143);
    expect(summaryOf(writer.paths.root)).toMatchObject({ interrupted: true, failures: { cancelled: 1 } });
    expect(journalTypes(journal).at(-1)).toBe('Failed');
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) expect(signals.listenerCount(signal)).toBe(0);
  });
});

describe('the provider of a run on the redis engine', () => {
  it("carries this environment's base URL to the workers, never a key or a URL with credentials", () => {
    const env = {
      OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1',
      OPENAI_API_KEY: 'sk-proj-abcdefghijklmnopqrstu',
    };
    const openai = chooseProvider({ flag: 'openai', env });
    expect(withEnvironmentBaseURL(openai, env).config).toEqual({
      kind: 'openai',
      options: { baseURL: 'http://127.0.0.1:8080/v1' },
    });
    // One the plan sets is kept; a URL with a password, the simulated model and modules get nothing.
    const planned = chooseProvider({ flag: 'openai', options: { baseURL: 'http://plan/v1' }, env });
    expect(withEnvironmentBaseURL(planned, env).config).toEqual({
      kind: 'openai',
      options: { baseURL: 'http://plan/v1' },
    });
    expect(withEnvironmentBaseURL(openai, { OPENAI_BASE_URL: 'http://user:pw@127.0.0.1/v1' }).config).toEqual(
      { kind: 'openai' },
    );
    const anthropic = chooseProvider({ flag: 'anthropic', env });
    expect(withEnvironmentBaseURL(anthropic, { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/' }).config).toEqual({
      kind: 'anthropic',
      options: { baseURL: 'http://127.0.0.1:9/' },
    });
    const simulated = chooseProvider({ flag: 'simulated', env });
    expect(withEnvironmentBaseURL(simulated, env)).toBe(simulated);
  });
});

describe('troupe resume RUN_DIR', () => {
  it('after a SIGKILL of fanout finishes the rest, without losing or redoing a finished result', async () => {
    writePlan([
      'threads: 1',
      'concurrency: 1',
      'providerOptions: { latency: 200 }',
      'agent: worker',
      'runs:',
      '  - task: Review a.md',
      '  - task: Review b.md',
      '  - task: Review a.md and b.md',
    ]);
    const out = path.join(dir, 'run');
    const results = path.join(out, 'results.jsonl');
    const first = startCli(['fanout', 'plan.yaml', '--out', out], { cwd: dir });
    await waitUntil(() => readResults(results).length >= 1, 'one agent finished');
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const before = readFileSync(results, 'utf8');
    const finished = readResults(results);
    // What the session wrote as it started: it has not ended, and the run is not complete.
    expect(summaryOf(out)).toMatchObject({
      interrupted: true,
      complete: false,
      sessions: [{ kind: 'fanout', interrupted: true, open: true }],
    });

    // `troupe resume DIR` hands a run directory to resumeRunDir; run in-process to save a startup.
    const io = captureIO();
    expect(await main(['resume', out], io)).toBe(0);
    expect(io.out()).toContain('troupe resume: resuming run');

    const text = readFileSync(results, 'utf8');
    expect(text.startsWith(before.slice(0, before.lastIndexOf('\n') + 1))).toBe(true);
    const lines = readResults(results);
    expect(lines.map((line) => line.index).sort()).toEqual([0, 1, 2]);
    expect(lines.every((line) => line.status === 'completed')).toBe(true);
    for (const done of finished) {
      // Finished before the kill: never started again.
      expect(
        journalTypes(path.join(out, 'journals', `${done.agentId}.jsonl`)).filter((t) => t === 'Started'),
      ).toHaveLength(1);
    }
    expect(summaryOf(out)).toMatchObject({ complete: true, counts: { completed: 3, notRun: 0 } });
    // The killed session wrote only its start, but events.jsonl shows it: it is counted, interrupted,
    // ending at its last logged event.
    const { sessions, wallTimeMs } = summaryOf(out);
    expect(sessions.map((session) => [session.kind, session.interrupted])).toEqual([
      ['fanout', true],
      ['resume', false],
    ]);
    const [killed, resumed] = sessions;
    expect(Date.parse(killed?.endedAt ?? '')).toBeGreaterThan(Date.parse(killed?.startedAt ?? ''));
    expect(wallTimeMs).toBe(
      sessions.reduce((sum, session) => sum + Date.parse(session.endedAt) - Date.parse(session.startedAt), 0),
    );
    expect(Date.parse(resumed?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(killed?.endedAt ?? ''));
  });
});

describe('Redis flags on the threads engine', () => {
  it('fanout and resume refuse --redis and --redis-down-timeout-ms instead of ignoring them', async () => {
    const plan = writePlan(['threads: 1', 'runs:', '  - { agent: worker, task: Review a.md }']);
    const out = path.join(dir, 'run');
    const refused = captureIO();
    expect(await main(['fanout', plan, '--redis-down-timeout-ms', '5', '--out', out], refused)).not.toBe(0);
    expect(refused.err()).toContain(
      '--redis-down-timeout-ms only applies to the redis engine; add --backend redis',
    );
    expect(existsSync(out)).toBe(false);

    expect(await main(['fanout', plan, '--out', out], captureIO())).toBe(0);
    const resumed = captureIO();
    expect(await main(['resume', out, '--redis', 'redis://127.0.0.1:1'], resumed)).not.toBe(0);
    expect(resumed.err()).toContain(
      `--redis only applies to the redis engine; ${out} ran on the threads engine`,
    );
  });
});
