import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { redactValue } from '../../src/journal/redact.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import type { AgentOutcome } from '../../src/loop/types.ts';
import { closingText } from '../../src/run-dir/execute.ts';
import { type ResultLine, resultLine } from '../../src/run-dir/results.ts';
import { planResume } from '../../src/run-dir/resume-plan.ts';
import { journalFile, RunDirWriter, readRunDir, summaryText } from '../../src/run-dir/run-dir.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { type RunSummary, summarize } from '../../src/run-dir/summary.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-rundir-'));
});
afterEach(() => cleanup());

const USAGE = { inputTokens: 100, outputTokens: 10, cachedInputTokens: 0, reasoningTokens: 0 };

function runPlan(count: number): RunPlan {
  return {
    format: 1,
    runId: '20250101-000000-abcdef',
    idPrefix: 'abcdef',
    createdAt: '2025-01-01T00:00:00.000Z',
    planFile: null,
    cwd: dir,
    provider: { name: 'simulated', config: { kind: 'simulated' }, simulated: true, source: 'default' },
    threads: 1,
    isolation: 'shared',
    concurrency: 2,
    agentFiles: [],
    toolModules: [],
    runs: Array.from({ length: count }, (_, index) => ({
      index,
      agentId: `abcdef-${index}`,
      agent: 'worker',
      task: `task ${index}`,
      context: [],
      metadata: {},
      source: { file: 'plan.yaml', line: index + 1, column: 1 },
    })),
  };
}

function line(
  index: number | null,
  agentId: string,
  outcome: Partial<AgentOutcome> & Pick<AgentOutcome, 'status'>,
  attempt = 1,
): ResultLine {
  const full =
    outcome.status === 'completed'
      ? ({
          agentId,
          answer: 'done',
          result: { summary: 'done' },
          usage: USAGE,
          costUsd: 0.01,
          rounds: 2,
          ...outcome,
        } as AgentOutcome)
      : ({
          agentId,
          reason: 'cancelled',
          error: { name: 'SystemError', code: 'cancelled', message: 'Cancelled: test', fields: {} },
          usage: USAGE,
          costUsd: 0.01,
          rounds: 1,
          ...outcome,
        } as AgentOutcome);
  return resultLine(full, {
    index,
    parentId: index === null ? 'abcdef-0' : undefined,
    agent: 'worker',
    attempt,
    label: undefined,
    hostId: 0,
    restarts: 0,
    startedAt: '2025-01-01T00:00:01.000Z',
    endedAt: '2025-01-01T00:00:03.000Z',
  });
}

function journal(agentId: string, tail: AuditEventInput[]): void {
  const writer = JournalWriter.open(journalFile(readRunDir(dir).paths, agentId), { fsync: 'never' });
  writer.append({
    type: 'Started',
    agentId,
    definition: { name: 'worker', hash: 'h' },
    provider: 'simulated',
    model: 'simulated',
    contextWindow: 1000,
    maxInputTokens: 900,
    context: [],
    task: 't',
    metadata: {},
    systemPrompt: 's',
    toolSpecs: [],
  });
  for (const event of tail) writer.append(event);
  writer.close();
}

describe('run directory', () => {
  it('appends one result line per agent and reads them back, ignoring a torn last line and cutting it on reopen', () => {
    const writer = RunDirWriter.create(dir, runPlan(2));
    writer.append(line(0, 'abcdef-0', { status: 'completed' }));
    writer.flush();
    appendFileSync(writer.paths.results, '{"index":1,"agentId":"abc');
    const torn = readRunDir(dir);
    expect(torn.results.map((l) => l.agentId)).toEqual(['abcdef-0']);
    expect(torn.tornTail).toBe(true);
    expect(torn.problems).toEqual([]);

    const reopened = RunDirWriter.reopen(dir);
    reopened.append(line(1, 'abcdef-1', { status: 'completed' }));
    reopened.flush();
    const contents = readRunDir(dir);
    expect(contents.tornTail).toBe(false);
    expect(contents.results.map((l) => l.agentId)).toEqual(['abcdef-0', 'abcdef-1']);
    expect(readFileSync(writer.paths.results, 'utf8').split('\n')).toHaveLength(3);
  });

  it('writes the result lines of one turn of the event loop together at its end, or at once for the summary', async () => {
    const writer = RunDirWriter.create(dir, runPlan(3000));
    // A Ctrl-C ends every queued agent of a fan-out in one turn: a write each took seconds.
    for (let index = 0; index < 2000; index += 1)
      writer.append(line(index, `abcdef-${index}`, { status: 'failed', reason: 'cancelled' }));
    expect(readFileSync(writer.paths.results, 'utf8')).toBe('');
    await new Promise((resolve) => setImmediate(resolve));
    expect(readRunDir(dir).results).toHaveLength(2000);
    for (let index = 2000; index < 3000; index += 1)
      writer.append(line(index, `abcdef-${index}`, { status: 'completed' }));
    // The second Ctrl-C writes the summary just before the process exits: the lines go first.
    writer.writeSummary(summarize(runPlan(3000), [], []));
    const contents = readRunDir(dir);
    expect(contents.results.map((l) => l.index)).toEqual(Array.from({ length: 3000 }, (_, index) => index));
    expect(contents.tornTail).toBe(false);
  });

  it('keeps of each result line only what the summary needs, not its answer, result or error', async () => {
    const plan = runPlan(400);
    const writer = RunDirWriter.create(dir, plan);
    const answer = 'x'.repeat(5000);
    const existing = Array.from({ length: 200 }, (_, index) =>
      line(
        index,
        `abcdef-${index}`,
        index % 2 === 0 ? { status: 'completed', answer } : { status: 'failed' },
      ),
    );
    const recovered = Array.from({ length: 200 }, (_, offset) =>
      line(200 + offset, `abcdef-${200 + offset}`, { status: 'completed', answer, result: { answer } }),
    );
    const session = new FanoutSession({ plan, writer, work: [], kind: 'resume', existing, recovered });
    const { summary } = await session.run();
    expect(session.lines).toHaveLength(400);
    const kept = session.lines.filter(
      (l) => 'answer' in l || 'result' in l || 'error' in l || 'metadata' in l,
    );
    expect(kept).toEqual([]);
    // The lines themselves are on disk, whole.
    const written = readRunDir(dir).results;
    expect(written).toHaveLength(200);
    expect(written.every((l) => l.answer === answer)).toBe(true);
    // The summary is what it is from the whole lines.
    expect(summary).toEqual({
      ...summarize(plan, [...existing, ...recovered], summary.sessions),
      updatedAt: summary.updatedAt,
    });
    expect(summary.counts).toMatchObject({
      planned: 400,
      completed: 300,
      failed: 100,
      cancelled: 100,
      notRun: 0,
    });
  });

  it('writes summary.json with one line per agent, not one per field', () => {
    const plan = runPlan(1000);
    const writer = RunDirWriter.create(dir, plan);
    const lines = plan.runs.map((run) => line(run.index, run.agentId, { status: 'completed' }));
    const summary = summarize(plan, lines, []);
    writer.writeSummary(summary);
    const text = readFileSync(writer.paths.summary, 'utf8');
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(summary)));
    // Indented in full, each agent took 20 lines: 14 MB for 20,000 agents.
    expect(text.split('\n').length).toBeLessThan(1100);
    expect(text).toContain(`\n    ${JSON.stringify(summary.agents[0])},\n`);
  });

  it('writes summary.json masked as a masked copy of the whole summary would be, a piece at a time', () => {
    const plan = runPlan(3);
    const writer = RunDirWriter.create(dir, plan);
    const secret = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD';
    const lines = plan.runs.map((run) => line(run.index, run.agentId, { status: 'completed' }));
    const summary = {
      ...summarize(plan, lines, []),
      name: `a run with ${secret} in its name`,
      budgetSpent: `spent; key ${secret}`,
      // Masked as a whole under a secret-named key, at any depth.
      byDefinition: { worker: { agents: 3 }, apiKey: { value: 'plain', list: [{ a: 'b' }] } },
      agents: [{ agentId: 'x', note: secret, nested: { token: 'plain text' } }],
    } as unknown as RunSummary;
    writer.writeSummary(summary);
    const text = readFileSync(writer.paths.summary, 'utf8');
    expect(text).toBe(`${summaryText(redactValue(summary))}\n`);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('plain');
  });

  it('refuses to create a run where one exists, and to read a directory that holds none', () => {
    RunDirWriter.create(dir, runPlan(1));
    expect(() => RunDirWriter.create(dir, runPlan(1))).toThrow(
      expect.objectContaining({ code: 'run_dir_exists' }),
    );
    expect(() => readRunDir(path.join(dir, 'journals'))).toThrow(
      expect.objectContaining({ code: 'not_a_run_dir' }),
    );
  });

  it('refuses a run directory under a file with run_dir_io, not a raw ENOTDIR', () => {
    const file = path.join(dir, 'plain.txt');
    writeFileSync(file, 'not a directory');
    expect(() => RunDirWriter.create(path.join(file, 'run'), runPlan(1))).toThrow(
      expect.objectContaining({ code: 'run_dir_io', fields: expect.objectContaining({ errno: 'ENOTDIR' }) }),
    );
  });

  it('marks estimated usage and an unknown cost in the summary and its closing text, never $0', () => {
    const estimated = { ...USAGE, estimated: true };
    const lines = [
      line(0, 'abcdef-0', { status: 'completed', usage: estimated, costUsd: null }),
      line(1, 'abcdef-1', { status: 'completed' }),
    ];
    const summary = summarize(runPlan(2), lines, []);
    expect(summary.usage.estimated).toBe(true);
    expect(summary).toMatchObject({ costUsd: null, unpricedAgents: 1 });
    expect(summary.byDefinition.worker?.costUsd).toBeNull();
    expect(summary.runLimits).toEqual({ maxTotalTokens: 10_000_000, maxCostUsd: 0 });
    const closing = closingText(summary, '/tmp/run');
    expect(closing).toContain('tokens ~200 in / ~20 out');
    expect(closing).toContain('(~ estimated where the server reported no usage)');
    expect(closing).toContain('cost unknown (no price for the model of 1 agent(s))');
  });

  it('summarises the last attempt of each entry, totals every attempt, and counts failures by reason', () => {
    const lines = [
      line(0, 'abcdef-0', { status: 'completed' }),
      line(1, 'abcdef-1', { status: 'failed' }),
      line(1, 'abcdef-1-r2', { status: 'completed' }, 2),
      line(2, 'abcdef-2', { status: 'failed', reason: 'step_limit' }),
      line(null, 'child-1', { status: 'failed', reason: 'crashed' }),
    ];
    const summary = summarize(runPlan(4), lines, [
      {
        kind: 'fanout',
        startedAt: '2025-01-01T00:00:00.000Z',
        endedAt: '2025-01-01T00:00:10.000Z',
        interrupted: true,
      },
      {
        kind: 'resume',
        startedAt: '2025-01-01T01:00:00.000Z',
        endedAt: '2025-01-01T01:00:05.000Z',
        interrupted: false,
      },
    ]);
    expect(summary.counts).toEqual({
      planned: 4,
      completed: 2,
      failed: 1,
      cancelled: 0,
      interrupted: 0,
      notRun: 1,
      nested: { completed: 0, failed: 1, interrupted: 0 },
    });
    expect(summary.failures).toEqual({ step_limit: 1, crashed: 1 });
    expect(summary.usage.inputTokens).toBe(500);
    expect(summary.costUsd).toBeCloseTo(0.05);
    expect(summary.byDefinition.worker).toMatchObject({ agents: 5, completed: 2, failed: 3 });
    expect(summary.wallTimeMs).toBe(15_000);
    expect(summary.interrupted).toBe(false);
    expect(summary.complete).toBe(false);
    expect(summary.simulated).toBe(true);
    expect(summary.agents.map((a) => a.wallTimeMs)).toEqual([2000, 2000, 2000, 2000, 2000]);
    // The reasons count the spawned agent too, so they are not printed as the plan entries' breakdown.
    const closing = closingText(summary, '/tmp/run');
    expect(closing).toContain(
      '2 of 4 completed, 1 failed, 1 not run; 1 spawned by agents (1 failed); failures: step_limit 1, crashed 1',
    );
    const planOnly = summarize(runPlan(3), lines.slice(0, 4), []);
    expect(closingText(planOnly, '/tmp/run')).toContain('2 of 3 completed, 1 failed (step_limit 1)\n');
    expect(closingText(planOnly, '/tmp/run')).toContain(
      'retry the failed: troupe resume /tmp/run --retry-failed',
    );
  });

  it('suggests --retry-failed only when it would run a failed entry again', () => {
    // A tool module that does not load fails every entry with invalid_request, which --retry-failed
    // leaves alone: the suggestion sent people to a command that did nothing.
    const invalid = (index: number) =>
      line(index, `abcdef-${index}`, {
        status: 'failed',
        reason: 'invalid_request',
        error: { name: 'UserError', code: 'invalid_tool_module', message: 'Could not import', fields: {} },
      });
    const summary = summarize(runPlan(2), [invalid(0), invalid(1)], []);
    expect(summary.failures).toEqual({ invalid_request: 2 });
    expect(closingText(summary, '/tmp/run')).not.toContain('--retry-failed');
  });
});

describe('planResume', () => {
  it('keeps final results, recovers ended journals, resumes unfinished ones and reruns cancelled entries', () => {
    const writer = RunDirWriter.create(dir, runPlan(6));
    const results = [
      line(0, 'abcdef-0', { status: 'completed' }),
      line(1, 'abcdef-1', { status: 'failed', reason: 'step_limit' }),
      line(2, 'abcdef-2', { status: 'failed', reason: 'cancelled' }),
    ];
    for (const result of results) writer.append(result);
    writer.flush();
    journal('abcdef-2', [
      {
        type: 'Failed',
        agentId: 'abcdef-2',
        reason: 'cancelled',
        error: { name: 'SystemError', code: 'cancelled', message: 'x', fields: {} },
        usage: USAGE,
        costUsd: 0,
        rounds: 1,
      },
    ]);
    journal('abcdef-3', [
      {
        type: 'Completed',
        agentId: 'abcdef-3',
        answer: 'from journal',
        result: { ok: 1 },
        usage: USAGE,
        costUsd: 0.5,
        rounds: 3,
      },
    ]);
    journal('abcdef-4', [{ type: 'Waiting', agentId: 'abcdef-4', callId: 'c1', index: 0 }]);
    writeFileSync(journalFile(writer.paths, 'abcdef-5-r2'), '');

    const decision = planResume(runPlan(6), writer.paths, results);
    expect(decision.kept).toBe(2);
    expect(decision.recovered).toEqual([
      expect.objectContaining({
        index: 3,
        agentId: 'abcdef-3',
        status: 'completed',
        answer: 'from journal',
        result: { ok: 1 },
        costUsd: 0.5,
        rounds: 3,
        attempt: 1,
        recoveredFrom: 'journal',
      }),
    ]);
    expect(
      decision.work.map(({ run, agentId, attempt, resume }) => ({
        index: run.index,
        agentId,
        attempt,
        resume,
      })),
    ).toEqual([
      { index: 2, agentId: 'abcdef-2-r2', attempt: 2, resume: false },
      { index: 4, agentId: 'abcdef-4', attempt: 1, resume: true },
      { index: 5, agentId: 'abcdef-5-r2', attempt: 2, resume: false },
    ]);
  });

  it('reads each result line a bounded number of times, however many entries the plan has', () => {
    // A 20,000-task run used to take ~25 s of CPU in planResume before resuming anything: every
    // entry scanned every result line and every journal file name.
    const count = 2000;
    const writer = RunDirWriter.create(dir, runPlan(count));
    const lines = Array.from({ length: count }, (_, index) =>
      line(index, `abcdef-${index}`, index % 2 === 0 ? { status: 'completed' } : { status: 'failed' }),
    );
    for (let index = 1; index < count; index += 2)
      writeFileSync(journalFile(writer.paths, `abcdef-${index}`), '');
    let reads = 0;
    const results = new Proxy(lines, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    const decision = planResume(runPlan(count), writer.paths, results);
    expect(decision.kept).toBe(count / 2);
    expect(decision.work).toHaveLength(count / 2);
    expect(decision.work[0]).toMatchObject({ agentId: 'abcdef-1-r2', attempt: 2, resume: false });
    expect(reads).toBeLessThanOrEqual(2 * count);
  });
});
