import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeSession } from '../../src/run-dir/execute.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { planResume } from '../../src/run-dir/resume-plan.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { captureIO, journalTypes, readResults, tempDir, waitUntil } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
});
afterEach(() => cleanup());

describe('Ctrl-C with most of a data set still queued', () => {
  it('spawns none of the queued entries: they stay not run, and resume starts them', async () => {
    const entries = 60;
    const file = path.join(dir, 'plan.yaml');
    writeFileSync(
      file,
      [
        'cwd: .',
        'threads: 1',
        'concurrency: 2',
        'agent: worker',
        'runs:',
        ...Array.from({ length: entries }, () => '  - task: Review a.md, then wait for an instruction.'),
        '',
      ].join('\n'),
    );
    const { plan, definitions } = await loadPlan(file);
    const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
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
        throw new Error('a single SIGINT must not exit at once');
      },
    });
    const journals = (): string[] => readdirSync(writer.paths.journals).filter((f) => f.endsWith('.jsonl'));
    await waitUntil(
      () =>
        journals().filter((f) => journalTypes(path.join(writer.paths.journals, f)).includes('Waiting'))
          .length === 2,
      'both running agents wait',
    );
    signals.emit('SIGINT');
    expect((await session).exitCode).toBe(130);

    // Before, each of the 58 queued entries was spawned (a journal, an engine message) only to be
    // cancelled at once, and got a result line.
    expect(journals()).toHaveLength(2);
    const lines = readResults(path.join(writer.paths.root, 'results.jsonl'));
    expect(lines.map((line) => [line.status, line.reason])).toEqual([
      ['failed', 'cancelled'],
      ['failed', 'cancelled'],
    ]);
    const summary = JSON.parse(
      readFileSync(path.join(writer.paths.root, 'summary.json'), 'utf8'),
    ) as RunSummary;
    expect(summary).toMatchObject({ interrupted: true, complete: false });
    expect(summary.counts).toMatchObject({ planned: entries, failed: 2, cancelled: 2, notRun: entries - 2 });
    expect(io.out()).toContain(`${entries - 2} not run`);

    const resume = planResume(runPlan, writer.paths, lines);
    const fresh = resume.work.filter((item) => item.attempt === 1 && !item.resume);
    const retried = resume.work.filter((item) => item.attempt === 2);
    expect([fresh.length, retried.length]).toEqual([entries - 2, 2]);
  });
});
