import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executions } from '../fixtures/engines/contract-tools.ts';
import { readResults, repoRoot, startCli, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-retry-'));
});
afterEach(() => cleanup());

function journalOf(runDir: string, agentId: string): Record<string, unknown>[] {
  return readFileSync(path.join(runDir, 'journals', `${agentId}.jsonl`), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('troupe resume --retry-failed', () => {
  it('runs agents that failed with provider_error again from their journals; finished tool calls do not run again', async () => {
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      [
        'threads: 1',
        'provider:',
        `  module: ${path.join(repoRoot, 'test/fixtures/cli/flaky-provider.ts')}`,
        'providerOptions:',
        `  markers: ${path.join(dir, 'markers')}`,
        'toolModules:',
        `  - ${path.join(repoRoot, 'test/fixtures/engines/contract-tools.ts')}`,
        'runs:',
        '  - { agent: worker, task: "Do flaky 0." }',
        '  - { agent: worker, task: "Do flaky 1." }',
        '  - { agent: worker, task: "Do steady." }',
      ].join('\n'),
    );
    const runDir = path.join(dir, 'run');
    const first = startCli(['fanout', 'plan.yaml', '--out', runDir], { cwd: dir });
    expect(await first.exited, first.stderr()).toBe(1);
    const failed = readResults(path.join(runDir, 'results.jsonl')).filter((line) => line.status === 'failed');
    expect(failed.map((line) => [line.index, line.reason]).sort()).toEqual([
      [0, 'provider_error'],
      [1, 'provider_error'],
    ]);
    expect(first.stdout()).toContain(`troupe resume ${runDir} --retry-failed`);
    const failedJournals = failed.map((line) =>
      readFileSync(path.join(runDir, 'journals', `${line.agentId}.jsonl`)),
    );

    // Without --retry-failed a finished run stays as it is.
    const plain = startCli(['resume', runDir], { cwd: dir });
    expect(await plain.exited).toBe(1);
    expect(readResults(path.join(runDir, 'results.jsonl'))).toHaveLength(3);

    const retry = startCli(['resume', runDir, '--retry-failed', '--reason', 'provider_error'], { cwd: dir });
    expect(await retry.exited, retry.stderr()).toBe(0);
    const results = readResults(path.join(runDir, 'results.jsonl'));
    for (const old of failed) {
      const again = results.findLast((line) => line.index === old.index);
      expect(again).toMatchObject({ status: 'completed', attempt: 2, agentId: `${old.agentId}-r2` });
      // `note` ran once, in the failed attempt; the retry took its result from the journal.
      expect(executions(dir, old.agentId)).toEqual(['note']);
      expect(executions(dir, `${old.agentId}-r2`)).toEqual([]);
      const events = journalOf(runDir, `${old.agentId}-r2`);
      expect(events[0]).toMatchObject({ type: 'Started', agentId: `${old.agentId}-r2` });
      expect(events.map((event) => event.type)).toContain('Resumed');
      expect(events.at(-1)).toMatchObject({ type: 'Completed' });
      const verify = startCli(['verify', path.join(runDir, 'journals', `${old.agentId}-r2.jsonl`)], {
        cwd: dir,
      });
      expect(await verify.exited, verify.stdout()).toBe(0);
    }
    // The failed attempts' journals are as they were: each still ends in its one Failed event.
    for (const [i, old] of failed.entries()) {
      expect(readFileSync(path.join(runDir, 'journals', `${old.agentId}.jsonl`))).toEqual(failedJournals[i]);
    }
    const summary = JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as {
      counts: { completed: number; failed: number };
    };
    expect(summary.counts).toMatchObject({ completed: 3, failed: 0 });
    expect(existsSync(path.join(dir, 'markers'))).toBe(true);
  });

  it('refuses --reason without --retry-failed, and unknown reasons', async () => {
    const lone = startCli(['resume', dir, '--reason', 'crashed'], { cwd: dir });
    expect(await lone.exited).toBe(1);
    expect(lone.stderr()).toContain('--reason goes with --retry-failed');
    const unknown = startCli(['resume', dir, '--retry-failed', '--reason', 'gremlins'], { cwd: dir });
    expect(await unknown.exited).not.toBe(0);
    expect(unknown.stderr()).toContain('Expected failure reasons');
  });
});
