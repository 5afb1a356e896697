/**
 * `troupe resume JOURNAL` after the agent's definition file was deleted: the agent runs the
 * definition recorded in its journal's Started event (docs/cli-run.md: "an edited file or a block
 * version published since changes nothing"), so a deleted file does not stop the resume either;
 * the header says the file is gone.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalContents } from '../../src/journal/verify.ts';
import { Project, runCli } from '../fixtures/cli/cli-helpers.ts';

let project: Project;
let cwd: string;

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n' });
  cwd = process.cwd();
  process.chdir(project.root);
});

afterEach(() => {
  process.chdir(cwd);
  project.remove();
});

describe('troupe resume of an agent whose definition file is gone', () => {
  it('continues with the definition recorded in the journal', async () => {
    const journal = project.path('run.jsonl');
    const run = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.md.',
      '--provider',
      'simulated',
      '--journal',
      journal,
    );
    expect(run.code).toBe(0);
    // Cut the journal where a crash could have: before its terminal event.
    const lines = readFileSync(journal, 'utf8').split('\n');
    const end = lines.findIndex((line) => line.includes('"type":"Completed"'));
    writeFileSync(journal, `${lines.slice(0, end).join('\n')}\n`);
    rmSync(project.path('.troupe/agents/reader.md'));

    const resumed = await runCli('resume', journal);
    expect([resumed.code, resumed.stderr]).toEqual([0, expect.stringContaining('no definition of `reader`')]);
    const contents = readJournal(journal);
    expect(verifyJournalContents(contents).ok).toBe(true);
    expect(contents.events.at(-1)?.type).toBe('Completed');
  });
});
