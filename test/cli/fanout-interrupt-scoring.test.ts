/** Ctrl-C during a fan-out whose scorer function never answers: the run stops at once, scores stay redoable. */
import { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeSession } from '../../src/run-dir/execute.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { captureIO, readResults, tempDir, waitUntil } from '../run-dir/helpers.ts';

/** Counts calls in the one process the scorer runs in (scorer modules run on the main thread). */
const CALLS = '__troupeHangingScorerCalls';
const globals = globalThis as Record<string, unknown>;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-interrupt-scoring-'));
  globals[CALLS] = 0;
  writeFileSync(
    path.join(dir, 'scorers.mjs'),
    [
      `export const hangs = () => { globalThis.${CALLS} += 1; return new Promise(() => {}); };`,
      'export const always = () => true;',
      '',
    ].join('\n'),
  );
});
afterEach(() => {
  delete globals[CALLS];
  cleanup();
});

describe('Ctrl-C while a scorer function has not answered', () => {
  it('ends the run at once, the score an error saying so, and names the command that scores again', async () => {
    const file = path.join(dir, 'plan.yaml');
    writeFileSync(
      file,
      [
        'cwd: .',
        'threads: 1',
        'agent: worker',
        'runs:',
        '  - { id: a, task: Say hello }',
        'scorers:',
        '  - { name: slow, type: module, module: scorers.mjs, export: hangs }',
        '  - { name: ok, type: module, module: scorers.mjs, export: always }',
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
        throw new Error('a single Ctrl-C must not exit at once');
      },
    });
    await waitUntil(() => globals[CALLS] === 1, 'the agent completed and its scorer function was called');
    signals.emit('SIGINT');
    // Before, the session waited out the function's 60 s timeout here.
    expect((await session).exitCode).toBe(130);
    const [line] = readResults(path.join(writer.paths.root, 'results.jsonl'));
    expect(line?.status).toBe('completed');
    expect(line?.scores).toEqual({
      slow: { score: 0, pass: false, error: 'the scorer function did not finish: interrupted (Ctrl-C)' },
      ok: { score: 1, pass: true },
    });
    expect(io.out()).toContain(`  score again: troupe score ${writer.paths.root}`);
  });
});
