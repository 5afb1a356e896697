/**
 * `troupe resume` of a run whose process was killed (SIGKILL) after an agent spawned by an agent
 * ended and before its result line was written: the line is taken from the child's journal, once.
 * The kill is made exact by deleting the line from a finished run (the journals are what a kill
 * there leaves). Judge journals, in the same directory and without lines, get none.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { captureIO, readResults, tempDir } from './helpers.ts';

const provider = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/supervisor/adoption-provider.ts',
);

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-nested-line-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'orchestrator.md'),
    '---\nname: orchestrator\ndescription: Splits work.\ntools: [spawn_agent, send_instruction, await_agents, complete_task]\n---\nSplit the work.\n',
  );
  writeFileSync(
    path.join(dir, 'agents', 'judge.md'),
    '---\nname: judge\ndescription: Grades answers.\ntools: [complete_task]\n---\nGrade the answer.\n',
  );
});
afterEach(() => cleanup());

/** A finished orchestration run with a judge: its results file and lines. */
async function finishedRun() {
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
      'scorers:',
      '  - { name: quality, type: judge, agent: judge, maxSteps: 1 }',
      '',
    ].join('\n'),
  );
  const out = path.join(dir, 'run');
  await main(['fanout', plan, '--out', out, '--json'], captureIO());
  const resultsFile = path.join(out, 'results.jsonl');
  const before = readResults(resultsFile);
  const children = before.filter((line) => line.index === null);
  expect(children).toHaveLength(2);
  const parent = before.find((line) => line.index === 0);
  const cut = children[1];
  if (parent === undefined || cut === undefined) throw new Error('no parent or second child');
  const judges = readdirSync(path.join(out, 'journals')).filter((file) => file.includes('-judge-'));
  expect(judges).toHaveLength(1);
  return { out, resultsFile, before, parent, cut };
}

/** Deletes the result lines of `agentIds`, as a kill before they were written leaves the file. */
function dropLines(resultsFile: string, agentIds: readonly string[]): void {
  const text = readFileSync(resultsFile, 'utf8').split('\n');
  const kept = text.filter((line) => !agentIds.some((id) => line.includes(`"agentId":"${id}"`)));
  writeFileSync(resultsFile, kept.join('\n'));
}

describe('troupe resume after a kill cut off a nested agent’s result line', () => {
  it('writes the line from the child’s journal exactly once, and none for judges', async () => {
    const { out, resultsFile, before, cut } = await finishedRun();
    // Killed between the second child's journal end and its line.
    dropLines(resultsFile, [cut.agentId]);
    expect(readResults(resultsFile)).toHaveLength(before.length - 1);

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    // Before: nothing wrote it (the parent had finished; a resumed parent adopts it silently).
    expect(after.filter((line) => line.agentId === cut.agentId)).toEqual([
      expect.objectContaining({
        index: null,
        parentId: cut.parentId,
        agent: 'worker',
        status: 'completed',
        result: cut.result,
        recoveredFrom: 'journal',
      }),
    ]);
    expect(after).toHaveLength(before.length);
    expect(after.filter((line) => line.agentId.includes('-judge-'))).toEqual([]);

    // A second resume finds nothing more to write.
    await main(['resume', out, '--json'], captureIO());
    expect(readResults(resultsFile)).toHaveLength(before.length);
  });

  it('writes it once when the parent is resumed and adopts the finished child', async () => {
    const { out, resultsFile, before, parent, cut } = await finishedRun();
    // Killed while the parent awaited its children, after both had ended and before the second's
    // line: the parent's journal ends at its await_agents call, and it has no line either.
    const journal = path.join(out, 'journals', `${parent.agentId}.jsonl`);
    const lines = readFileSync(journal, 'utf8').split('\n');
    const at = readJournal(journal).events.findIndex(
      (e) => e.type === 'ToolCall' && e.name === 'await_agents',
    );
    expect(at).toBeGreaterThan(0);
    writeFileSync(journal, `${lines.slice(0, at + 1).join('\n')}\n`);
    dropLines(resultsFile, [cut.agentId, parent.agentId]);

    await main(['resume', out, '--json'], captureIO());
    const after = readResults(resultsFile);
    expect(after.filter((line) => line.agentId === cut.agentId)).toEqual([
      expect.objectContaining({
        index: null,
        parentId: parent.agentId,
        status: 'completed',
        result: cut.result,
      }),
    ]);
    // The parent ran on from its await and took both children as finished: nothing ran twice.
    expect(after.filter((line) => line.agentId === parent.agentId)).toEqual([
      expect.objectContaining({ index: 0, status: 'completed', result: parent.result }),
    ]);
    expect(after.filter((line) => line.index === null)).toHaveLength(2);
    expect(after).toHaveLength(before.length);
    expect(after.filter((line) => line.agentId.includes('-judge-'))).toEqual([]);
  });
});
