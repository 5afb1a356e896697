/**
 * An agent spawned by an agent that has a result line, and that never ended itself (a run killed
 * while it ran), counts as interrupted wherever the run's counts are made: `troupe score`'s
 * summary.json (unendedAttempts, from the journals' heads) as the report's timeline does. Before,
 * unendedAttempts looked only under plan entries without a line, and such a child was not counted.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { readRunDir } from '../../src/run-dir/run-dir.ts';
import { summarize } from '../../src/run-dir/summary.ts';
import { buildTimeline, unendedAttempts, unendedOf } from '../../src/run-dir/timeline.ts';
import { captureIO, readResults, tempDir } from './helpers.ts';

const provider = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/supervisor/adoption-provider.ts',
);

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-children-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'orchestrator.md'),
    '---\nname: orchestrator\ndescription: Splits work.\ntools: [spawn_agent, send_instruction, await_agents, complete_task]\n---\nSplit the work.\n',
  );
});
afterEach(() => cleanup());

describe('a child without a line under a parent with one', () => {
  it('is counted interrupted by unendedAttempts, as the timeline counts it', async () => {
    const plan = path.join(dir, 'plan.yaml');
    writeFileSync(
      plan,
      [
        'agent: orchestrator',
        'agents: agents',
        `cwd: ${JSON.stringify(dir)}`,
        'threads: 1',
        `provider: { module: ${JSON.stringify(provider)} }`,
        'runs:',
        '  - { id: split, task: "Split the work between two workers." }',
        '',
      ].join('\n'),
    );
    const out = path.join(dir, 'run');
    await main(['fanout', plan, '--out', out, '--json'], captureIO());
    const resultsFile = path.join(out, 'results.jsonl');
    const lines = readResults(resultsFile);
    const child = lines.find((line) => line.index === null);
    expect(lines.find((line) => line.index === 0)?.status).toBe('completed');
    if (child === undefined) throw new Error('no spawned agent');
    // A kill while the child ran: its journal stops before its end, and it has no line.
    const journal = path.join(out, 'journals', `${child.agentId}.jsonl`);
    const end = readJournal(journal).events.findIndex((e) => e.type === 'Completed' || e.type === 'Failed');
    expect(end).toBeGreaterThan(0);
    writeFileSync(journal, `${readFileSync(journal, 'utf8').split('\n').slice(0, end).join('\n')}\n`);
    writeFileSync(
      resultsFile,
      readFileSync(resultsFile, 'utf8')
        .split('\n')
        .filter((line) => !line.includes(`"agentId":"${child.agentId}"`))
        .join('\n'),
    );

    const contents = readRunDir(out);
    const unended = unendedAttempts(contents);
    expect(unended).toEqual(unendedOf(buildTimeline(contents)));
    expect(unended).toEqual({ entries: new Set(), nested: 1 });
    const summary = summarize(contents.plan, contents.results, [], new Date(), undefined, unended);
    expect(summary.counts).toMatchObject({ completed: 1, interrupted: 0, nested: { interrupted: 1 } });
  });
});
