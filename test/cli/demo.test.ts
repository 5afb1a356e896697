import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalTypes, readResults, simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-demo-'));
});
afterEach(() => cleanup());

describe('troupe demo', () => {
  it('runs an orchestrator and 8 instructed workers on the simulated model, ending with a table and the run dir', async () => {
    const out = path.join(dir, 'run');
    const run = startCli(['demo', '--out', out], { cwd: dir });
    expect(await run.exited).toBe(0);
    const results = readResults(path.join(out, 'results.jsonl'));
    const orchestrator = results.find((line) => line.index === 0);
    expect(orchestrator).toMatchObject({ agent: 'orchestrator', status: 'completed' });
    const workers = results.filter((line) => line.index === null);
    expect(workers).toHaveLength(8);
    for (const worker of workers) {
      expect(worker).toMatchObject({ agent: 'worker', status: 'completed', parentId: orchestrator?.agentId });
      // Each worker waited for the orchestrator's instruction, got it, and delivered through complete_task.
      const types = journalTypes(path.join(out, 'journals', `${worker.agentId}.jsonl`));
      expect(types).toEqual(expect.arrayContaining(['Waiting', 'Instructed', 'Completed']));
    }
    expect(new Set(workers.map((worker) => worker.hostId))).toEqual(new Set([0, 1]));
    const reviews = (orchestrator?.result as { reviews: { status: string }[] } | undefined)?.reviews;
    expect(reviews?.map((review) => review.status)).toEqual(Array(8).fill('completed'));

    const stdout = run.stdout();
    expect(stdout).toContain('troupe: using the simulated model');
    expect(stdout).toMatch(/#\s+AGENT ID\s+DEFINITION\s+STATUS/);
    expect(stdout.match(/^↳ .* worker +completed/gm)).toHaveLength(8);
    expect(stdout.trimEnd().split('\n').slice(-2)).toEqual([
      `run dir: ${out}`,
      `  report: troupe report ${out} [--html report.html]`,
    ]);
  });
});

describe('troupe demo with an API key in the environment', () => {
  it('says it runs on the simulated model because it is the demo, not that no key is set', async () => {
    const out = path.join(dir, 'run');
    const run = startCli(['demo', '--json', '--out', out], {
      cwd: dir,
      env: simulatedEnv({ OPENAI_API_KEY: 'sk-test-demo' }),
    });
    expect(await run.exited).toBe(0);
    const header = JSON.parse(run.stdout().split('\n')[0] ?? '{}') as { type?: string; notice?: string };
    expect(header.type).toBe('run');
    expect(header.notice).toContain('troupe demo always runs on it');
    expect(run.stdout() + run.stderr()).not.toContain('no API key is set');
  });
});
