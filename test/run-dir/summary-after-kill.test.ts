/**
 * summary.json is written when a session starts as well as when it ends: a session killed
 * outright (SIGKILL, a power cut) used to leave the previous session's summary, which could say
 * the run was complete and not interrupted while a `--retry-failed` attempt had been cut off.
 * Until the session ends, the summary says it has not (`open`, interrupted, not complete), and a
 * reader takes its end from events.jsonl.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import type { RunLogEvent } from '../../src/run-dir/run-log.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { type RunSummary, recordedSessions, summarize } from '../../src/run-dir/summary.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-summary-kill-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

async function simulatedRun() {
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    'cwd: .\nthreads: 1\nagent: worker\nruns:\n  - task: Review a.md.\n',
  );
  const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
  return { runPlan, writer, definitions };
}

describe('summary.json while a session runs', () => {
  it('says the session has not ended from its start, and is rewritten at its end', async () => {
    const { runPlan, writer, definitions } = await simulatedRun();
    const read = (): RunSummary => JSON.parse(readFileSync(writer.paths.summary, 'utf8')) as RunSummary;
    let atStart: RunSummary | undefined;
    const work = runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false }));
    const { summary } = await new FanoutSession({
      plan: runPlan,
      writer,
      work,
      kind: 'fanout',
      definitions,
      onEvent: (event) => {
        if (event.type === 'run') atStart = read();
      },
    }).run();
    // What a kill from here on would leave.
    expect(atStart?.sessions).toEqual([
      expect.objectContaining({ kind: 'fanout', open: true, interrupted: true }),
    ]);
    expect(atStart).toMatchObject({ interrupted: true, complete: false });
    // The end replaces it.
    expect(summary).toMatchObject({ interrupted: false, complete: true });
    expect(read().sessions).toEqual([expect.not.objectContaining({ open: true })]);
    expect(read()).toMatchObject({ interrupted: false, complete: true, counts: { completed: 1 } });
  });

  it('is read, once its session was killed, with the session ending at its last logged event', async () => {
    const { runPlan } = await simulatedRun();
    const done = {
      kind: 'fanout' as const,
      startedAt: '2026-01-01T00:00:00.000Z',
      endedAt: '2026-01-01T00:01:00.000Z',
      interrupted: false,
    };
    const open = {
      kind: 'resume' as const,
      startedAt: '2026-01-01T01:00:00.000Z',
      endedAt: '2026-01-01T01:00:00.000Z',
      interrupted: true,
      open: true as const,
    };
    const events: RunLogEvent[] = [
      { ts: '2026-01-01T00:00:00.001Z', type: 'session', event: 'started', kind: 'fanout' },
      { ts: '2026-01-01T00:00:59.000Z', type: 'session', event: 'ended', kind: 'fanout', interrupted: false },
      { ts: '2026-01-01T01:00:00.001Z', type: 'session', event: 'started', kind: 'resume' },
      { ts: '2026-01-01T01:00:30.000Z', type: 'agent', agentId: 'x', hostId: 1, resumed: false },
    ];
    const sessions = recordedSessions({ sessions: [done, open] }, events);
    expect(sessions).toEqual([
      done,
      {
        kind: 'resume',
        startedAt: '2026-01-01T01:00:00.001Z',
        endedAt: '2026-01-01T01:00:30.000Z',
        interrupted: true,
      },
    ]);
    // A summary whose last session is open never says the run is complete.
    const line = {
      index: 0,
      agentId: runPlan.runs[0]?.agentId ?? '',
      parentId: null,
      agent: 'worker',
      attempt: 1,
      status: 'completed' as const,
      usage: { inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: 0,
      rounds: 1,
      startedAt: done.startedAt,
      endedAt: done.endedAt,
    };
    expect(summarize(runPlan, [line], [done]).complete).toBe(true);
    expect(summarize(runPlan, [line], [done, open]).complete).toBe(false);
  });
});
