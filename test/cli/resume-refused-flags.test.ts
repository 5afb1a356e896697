/**
 * `troupe resume` refuses the flags its form cannot honour (docs/cli.md, docs/cli-run.md) instead
 * of ignoring them: `--cwd` with a run directory (its agents keep the working directory in its
 * plan.json), and `--max-run-tokens`, `--redis`, `--redis-down-timeout-ms` and `--retain-seconds`
 * with a single journal (no run budget, no Redis, no plan.json). Each exits 1 with
 * `invalid_option` before anything is written.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { PROVIDER_ENV, Project, runCli, savedEnv } from '../fixtures/cli/cli-helpers.ts';

let project: Project;
const restoreEnv = savedEnv(PROVIDER_ENV);

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n' });
  for (const name of PROVIDER_ENV) delete process.env[name];
});

afterEach(() => {
  project.remove();
  restoreEnv();
});

/** A journal of `reader` cut before its Completed event: a resume would run the agent on. */
async function unfinishedJournal(): Promise<string> {
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
    '--cwd',
    project.root,
  );
  expect(run.code, run.stderr).toBe(0);
  const lines = readFileSync(journal, 'utf8').split('\n');
  const end = lines.findIndex((line) => line.includes('"type":"Completed"'));
  writeFileSync(journal, `${lines.slice(0, end).join('\n')}\n`);
  return journal;
}

const REFUSED_WITH_A_JOURNAL = [
  ['--max-run-tokens', '1000'],
  ['--redis', 'redis://127.0.0.1:1'],
  ['--redis-down-timeout-ms', '5000'],
  ['--retain-seconds', '60'],
] as const;

describe('troupe resume JOURNAL and the flags of a run directory', () => {
  it.each(REFUSED_WITH_A_JOURNAL)(
    'refuses %s with invalid_option and writes nothing',
    async (flag, value) => {
      const journal = await unfinishedJournal();
      const before = readFileSync(journal);

      const refused = await runCli('resume', journal, flag, value);
      expect([refused.code, refused.stderr]).toEqual([
        1,
        `troupe: invalid_option: ${flag} only applies to a run directory; a single journal is resumed in this process, with no run budget or Redis\n`,
      ]);
      expect(readFileSync(journal)).toEqual(before);

      // The same journal without the flag resumes: the flag, not the journal, was refused.
      const resumed = await runCli('resume', journal);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(readJournal(journal).events.at(-1)?.type).toBe('Completed');
    },
  );

  it('names every such flag given in one refusal', async () => {
    const journal = await unfinishedJournal();
    const refused = await runCli(
      'resume',
      journal,
      '--retain-seconds',
      '60',
      '--max-run-tokens',
      '10',
      '--json',
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'troupe: invalid_option: --max-run-tokens, --retain-seconds only apply to a run directory;',
    );
  });
});

/** A finished run directory of one `reader` entry, and the run's files as they are. */
async function finishedRunDir(): Promise<{ out: string; files: () => string[] }> {
  const plan = project.write(
    'plan.yaml',
    [
      'threads: 1',
      'provider: simulated',
      `cwd: ${JSON.stringify(project.root)}`,
      'runs:',
      '  - { agent: reader, task: Read a.md. }',
      '',
    ].join('\n'),
  );
  const out = project.path('run');
  const fanout = await runCli('fanout', plan, '--out', out, '--json');
  expect(fanout.code, fanout.stderr).toBe(0);
  const files = (): string[] =>
    ['plan.json', 'results.jsonl', 'summary.json'].map((file) =>
      readFileSync(project.path('run', file), 'utf8'),
    );
  return { out, files };
}

const CWD_REFUSED =
  'troupe: invalid_option: --cwd applies to a journal; the agents of a run directory keep the working directory recorded in its plan.json\n';

describe('troupe resume RUN_DIR and the flags of a journal', () => {
  it('refuses --cwd naming a missing directory for being --cwd, not for the directory', async () => {
    const { out, files } = await finishedRunDir();
    const before = files();

    // Without the fix the option's parser ran first and said the directory was not found.
    const refused = await runCli('resume', out, '--cwd', project.path('gone'));
    expect([refused.code, refused.stderr]).toEqual([1, CWD_REFUSED]);
    expect(files()).toEqual(before);
  });

  it.each([
    [['--allow', 'Bash(ls:*)'], '--allow applies'],
    [['--deny', 'Edit(.env)', '--ask', 'Bash(git push:*)'], '--ask, --deny apply'],
    [['--permission-mode', 'plan'], '--permission-mode applies'],
    [['--allow-bypass-permissions'], '--allow-bypass-permissions applies'],
    [['--approval-timeout', '5'], '--approval-timeout applies'],
    // The rules file is not read: the flag is what is refused.
    [['--permissions', '/nonexistent/rules.yaml'], '--permissions applies'],
  ])('refuses the permission flags %j naming them', async (flags, named) => {
    const { out, files } = await finishedRunDir();
    const before = files();

    const refused = await runCli('resume', out, ...flags);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      `troupe: invalid_option: ${named} to a journal; the agents of a run directory keep the permissions of its plan (of the permission flags only --approve is taken)\n`,
    ]);
    expect(files()).toEqual(before);
  });

  it("still checks that a journal's --cwd exists, naming the flag", async () => {
    const journal = await unfinishedJournal();
    const missing = project.path('gone');
    const refused = await runCli('resume', journal, '--cwd', missing);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      `troupe: invalid_option: --cwd: Expected an existing directory, got ${JSON.stringify(missing)} (not found).\n`,
    ]);
  });
});

describe('troupe resume RUN_DIR --cwd', () => {
  it('is refused with invalid_option: the agents keep the working directory of the plan', async () => {
    const { out, files } = await finishedRunDir();
    const before = files();

    const refused = await runCli('resume', out, '--cwd', project.home);
    expect([refused.code, refused.stderr]).toEqual([1, CWD_REFUSED]);
    expect(files()).toEqual(before);
  });
});
