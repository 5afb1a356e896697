import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { progressLine, startedWarningLine } from '../../src/cli/shared/progress.ts';
import { chooseProvider, resolveModel } from '../../src/cli/shared/provider-choice.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { formatTokens } from '../../src/run-dir/format.ts';
import { watchInterrupts } from '../../src/run-dir/interrupt.ts';
import { journalEvents, PROVIDER_ENV, Project, READER, runCli } from '../fixtures/cli/cli-helpers.ts';
import { repoRoot, runScript } from '../run-dir/helpers.ts';

const SIMULATED_NOTICE =
  'provider: simulated (no API key found; set OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY to use a real model)';
const TASK = 'Summarise a.md and notes/b.txt';

let project: Project;
let saved: Record<string, string | undefined>;

beforeEach(() => {
  project = new Project({ 'a.md': '# A\nalpha\n', 'notes/b.txt': 'beta\n' });
  saved = Object.fromEntries(['HOME', ...PROVIDER_ENV].map((name) => [name, process.env[name]]));
  for (const name of PROVIDER_ENV) delete process.env[name];
  // Keep the developer's own ~/.troupe agents out of discovery.
  process.env.HOME = project.home;
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  project.remove();
});

function runsDir(): string {
  return project.path('.troupe/runs');
}

/** The one journal `troupe run` wrote under .troupe/runs. */
function onlyJournal(): string {
  const files = readdirSync(runsDir());
  expect(files).toHaveLength(1);
  return project.path('.troupe/runs', files[0] ?? '');
}

describe('troupe run', () => {
  it('runs on the simulated model when no key is set, says so first, and prints the result', async () => {
    const listeners = () => [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const before = listeners();
    const result = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root);
    expect(result.code).toBe(0);
    // The run's Ctrl-C handlers live only as long as the run; one listener per signal stays for
    // good (see keepListening in src/run-dir/interrupt.ts), and runs do not add up.
    const after = listeners();
    expect(after.map((count, i) => count - (before[i] ?? 0))).toSatisfy((added: number[]) =>
      added.every((n) => n === 0 || n === 1),
    );
    await runCli('run', 'reader', '--task', TASK, '--cwd', project.root);
    expect(listeners()).toEqual(after);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(SIMULATED_NOTICE);
    expect(lines[1]).toMatch(/^agent: reader \(.*reader\.md\) · model: simulated · id: reader-[0-9a-f]{8}$/);
    expect(lines).toContain('round 1 · read_file a.md');
    expect(lines).toContain('round 1 · read_file notes/b.txt');
    expect(lines).toContain('round 1 · complete_task');
    expect(lines).toContain('limits: 32 steps · 1.0M tokens · no cost limit · no time limit');
    expect(lines.at(-1)).toMatch(/^completed in 1 round \(3 steps\) · [\d.]+k? tokens in · \d+ out$/);
    const delivered = JSON.parse(result.stdout) as { summary: string; files: string[] };
    expect(delivered.summary).toContain('[simulated]');
    expect(delivered.files).toEqual(['a.md', 'notes/b.txt']);
  });

  it('a Started warning without a line (a definition given as an object) names its file only, at no made-up 1:1', () => {
    const warning = { code: 'unknown_model', message: 'm', file: 'agents/a.md', path: '/model' };
    expect(startedWarningLine(warning)).toBe('agents/a.md: warning unknown_model: m');
    expect(startedWarningLine({ ...warning, line: 4, column: 8 })).toBe(
      'agents/a.md:4:8: warning unknown_model: m',
    );
    expect(startedWarningLine({ code: 'unknown_model', message: 'm' })).toBe('warning unknown_model: m');
  });

  it('prints what reading the definition warned about with the header, the tool warnings once', async () => {
    const file = project.write(
      '.claude/agents/loose.md',
      '---\nname: loose\ndescription: Reads: files\nshiny: 1\ntools: Read, Frob\n---\nRead.\n',
    );
    const result = await runCli('run', 'loose', '--task', TASK, '--cwd', project.root);
    expect(result.code).toBe(0);
    const lines = result.stderr.trimEnd().split('\n');
    // Before: nothing said the description was read leniently or that `shiny` is ignored.
    expect(lines.slice(2, 4)).toEqual([
      `${file}:3:19: warning lenient_parse: Invalid YAML in frontmatter: expected a plain text value for \`description\`, found \`: \` inside it, which YAML reads as a nested key; quote the value or use a block scalar (\`description: |\`). Read the top-level \`key: value\` lines as plain strings instead (lenient mode)`,
      `${file}:4:1: warning unknown_key: Unknown key \`shiny\`; kept in \`extra\`, otherwise ignored (/shiny)`,
    ]);
    expect(lines.filter((line) => line.includes('`Frob`'))).toHaveLength(1);
  });

  it('warns once about a model name that cannot be an id, whether --model or the definition gave it', async () => {
    const unknownModel = (stderr: string) =>
      stderr.split('\n').filter((line) => line.includes('unknown_model'));
    // Before: a typo in --model was sent as written without a word.
    const typo = await runCli('run', 'reader', '--model', 'sonet', '--task', TASK, '--cwd', project.root);
    expect(typo.code).toBe(0);
    expect(unknownModel(typo.stderr)).toEqual([
      expect.stringMatching(
        /^warning unknown_model: Expected `--model` to be .*, found `sonet` \(did you mean `sonnet`\?\)/,
      ),
    ]);

    // Before: the simulated provider ran as `simulated` and nothing (header or Started) said the
    // definition's model would be refused by a real provider.
    const file = project.write(
      '.troupe/agents/typo.md',
      '---\nname: typo\ndescription: d\nmodel: sonet\n---\nRead.\n',
    );
    const simulated = await runCli('run', 'typo', '--task', TASK, '--cwd', project.root);
    expect(simulated.code).toBe(0);
    expect(unknownModel(simulated.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${file.replaceAll(/[.\\]/g, '\\$&')}:4:8: warning unknown_model: Expected \`model\` to be .*found \`sonet\`.*this run does not send it: the simulated provider runs as \`simulated\``,
        ),
      ),
    ]);

    const both = await runCli('run', 'typo', '--model', 'sonet', '--task', TASK, '--cwd', project.root);
    expect(unknownModel(both.stderr)).toEqual([expect.stringContaining('Expected `--model` to be')]);
  });

  it('--json carries what reading the definition warned about in the Run line, located', async () => {
    const file = project.write(
      '.claude/agents/loose.md',
      '---\nname: loose\ndescription: Reads: files\nshiny: 1\ntools: Read, Frob\n---\nRead.\n',
    );
    const result = await runCli('run', 'loose', '--task', TASK, '--cwd', project.root, '--json');
    expect(result.code).toBe(0);
    const [run, started] = result.stdout
      .split('\n')
      .slice(0, 2)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // Before: the Run line had no warnings; a program reading --json never learnt of them.
    expect(run?.warnings).toEqual([
      expect.objectContaining({ code: 'lenient_parse', file, line: 3, column: 19, path: '' }),
      {
        code: 'unknown_key',
        message: 'Unknown key `shiny`; kept in `extra`, otherwise ignored',
        file,
        line: 4,
        column: 1,
        path: '/shiny',
      },
    ]);
    // The tool warnings stay in Started, once.
    expect(started).toMatchObject({ type: 'Started', warnings: [{ code: 'unknown_tool', line: 5 }] });
    const plain = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--json');
    expect(JSON.parse(plain.stdout.split('\n')[0] ?? '')).toMatchObject({ type: 'Run', warnings: [] });
  });

  it('writes the journal to .troupe/runs/<timestamp>-<agent>-<id>.jsonl under --cwd, names it, and it verifies', async () => {
    const result = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root);
    const journal = onlyJournal();
    expect(journal).toMatch(/[/\\]\d{8}T\d{6}Z-reader-[0-9a-f]{8}\.jsonl$/);
    expect(result.stderr).toContain(`journal: ${journal}`);
    const events = journalEvents(journal);
    expect(events[0]).toMatchObject({
      type: 'Started',
      provider: 'simulated',
      model: 'simulated',
      task: TASK,
      metadata: { cwd: project.root },
    });
    expect(events.at(-1)?.type).toBe('Completed');
    // The simulated reader reads two files and completes: three model requests in one round.
    expect(verifyJournalFile(journal, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 3,
    });
  });

  it('--json prints a Run line, every journalled event as it happened, and an Outcome line', async () => {
    const journal = project.path('custom/run.jsonl');
    const result = await runCli(
      'run',
      'reader',
      '--task',
      TASK,
      '--cwd',
      project.root,
      '--journal',
      journal,
      '--json',
    );
    expect(result.code).toBe(0);
    // `custom/` did not exist: its creation is the one line on stderr.
    expect(result.stderr).toBe(`troupe: created directory ${project.path('custom')} for the journal\n`);
    const lines = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      type: 'Run',
      command: 'run',
      agent: 'reader',
      provider: 'simulated',
      simulated: true,
      notice: SIMULATED_NOTICE,
      journal,
    });
    expect(lines.slice(1, -1)).toEqual(readJournal(journal).events);
    expect(lines.at(-1)).toMatchObject({
      type: 'Outcome',
      status: 'completed',
      simulated: true,
      journal,
      result: { files: ['a.md', 'notes/b.txt'] },
    });
  });

  it('--provider simulated wins over a configured key, and the notice says it was chosen', async () => {
    process.env.OPENAI_API_KEY = 'sk-test-not-used';
    const result = await runCli(
      'run',
      'reader',
      '--task',
      TASK,
      '--cwd',
      project.root,
      '--provider',
      'simulated',
    );
    expect(result.code).toBe(0);
    expect(result.stderr.split('\n')[0]).toBe(
      'provider: simulated (chosen with --provider; no model is called and every answer is simulated)',
    );
  });

  it('a failed agent exits 1 and prints its reason and error code; the journal ends with Failed', async () => {
    // gpt-4's 8k window cannot hold the protocol reserve plus this task: the budget check fails it.
    const result = await runCli(
      'run',
      'reader',
      '--task',
      `Summarise a.md. ${'filler '.repeat(5000)}`,
      '--cwd',
      project.root,
      '--model',
      'gpt-4',
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /failed after 0 rounds \(0 steps\) · 0 tokens in · 0 out\nreason: budget · code: context_budget · /,
    );
    const events = journalEvents(onlyJournal());
    expect(events[0]).toMatchObject({ type: 'Started', model: 'gpt-4' });
    expect(events.at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'budget',
      error: { code: 'context_budget' },
    });
  });

  it('--max-steps is recorded as a limit and must be a positive integer', async () => {
    const ok = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--max-steps', '3');
    expect(ok.code).toBe(0);
    expect(journalEvents(onlyJournal())[0]).toMatchObject({ type: 'Started', limits: { maxSteps: 3 } });
    for (const bad of ['0', '-1', '2.5', 'many', '251']) {
      const result = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--max-steps', bad);
      // Commander's exit code for an invalid option value.
      expect(result.code, bad).toBe(1);
      expect(result.stderr).toContain('Expected a positive integer');
    }
    // Above the loop's cap it used to run with 250 steps without a word.
    const over = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--max-steps', '500');
    expect(over.stderr).toContain(
      'Expected a positive integer of at most 250 (runs stop at 250 model requests), got `"500"` (string)',
    );
  });

  it('an unknown agent fails before any journal is created', async () => {
    const result = await runCli('run', 'nobody', '--task', TASK, '--cwd', project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown_agent: .*`nobody`.*available: reader/);
    expect(existsSync(runsDir())).toBe(false);
  });

  it('an unknown skill to pre-load fails before any journal is created, with its file and line', async () => {
    project.write(
      '.troupe/agents/skilled.md',
      '---\nname: skilled\ndescription: Uses skills\nskills: [nosuch]\n---\nWork.\n',
    );
    const result = await runCli('run', 'skilled', '--task', TASK, '--cwd', project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown_skill: .*skilled\.md:4: unknown skill `nosuch`/);
    expect(existsSync(runsDir())).toBe(false);
  });

  it('refuses a --cwd that is not an existing directory, creating nothing (run, agents, blocks)', async () => {
    const missing = project.path('typo', 'sub');
    for (const argv of [
      ['run', 'reader', '--task', TASK, '--cwd', missing],
      ['agents', 'list', '--cwd', missing],
      ['blocks', 'list', '--cwd', missing],
    ]) {
      const result = await runCli(...argv);
      expect(result.code, argv.join(' ')).toBe(1);
      expect(result.stderr).toContain(
        `Expected an existing directory, got ${JSON.stringify(missing)} (not found)`,
      );
    }
    expect(existsSync(project.path('typo'))).toBe(false);
    const file = project.path('plain.txt');
    writeFileSync(file, 'not a directory');
    const onFile = await runCli('run', 'reader', '--task', TASK, '--cwd', file);
    expect(onFile.code).toBe(1);
    expect(onFile.stderr).toContain('(a file)');
  });

  it('refuses a --journal that already holds events, leaving it untouched', async () => {
    const journal = project.path('run.jsonl');
    await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    const before = readFileSync(journal);
    const result = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/journal_exists: .*troupe resume/);
    expect(readFileSync(journal)).toEqual(before);
  });

  it('says once on stderr that it created the directory of a --journal, and nothing when it existed', async () => {
    const journal = project.path('new', 'sub', 'run.jsonl');
    const made = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    expect(made.code).toBe(0);
    const line = `troupe: created directory ${project.path('new', 'sub')} for the journal\n`;
    expect(made.stderr.split(line)).toHaveLength(2);
    expect(existsSync(journal)).toBe(true);
    const again = await runCli(
      'run',
      'reader',
      '--task',
      TASK,
      '--cwd',
      project.root,
      '--journal',
      project.path('new', 'sub', 'second.jsonl'),
    );
    expect(again.code).toBe(0);
    expect(again.stderr).not.toContain('created directory');
  });

  it('refuses a --journal under a file with journal_io, not an internal error', async () => {
    const file = project.path('plain.txt');
    writeFileSync(file, 'not a directory');
    const result = await runCli(
      'run',
      'reader',
      '--task',
      TASK,
      '--cwd',
      project.root,
      '--journal',
      `${file}/run.jsonl`,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^troupe: journal_io: .*a part of the path is a file, not a directory/);
    expect(result.stderr).not.toContain('internal error');
    expect(readFileSync(file, 'utf8')).toBe('not a directory');
  });
});

describe('troupe verify', () => {
  async function completedJournal(): Promise<string> {
    const journal = project.path('run.jsonl');
    await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    return journal;
  }

  it('reports the events and model requests it verified and exits 0', async () => {
    const journal = await completedJournal();
    const count = journalEvents(journal).length;
    const result = await runCli('verify', journal);
    expect(result).toEqual({
      code: 0,
      stdout: `ok: ${count} events, 3 model requests in 1 round verified\nthe agent completed\n`,
      stderr: '',
    });
  });

  it('a truncated last line is a torn append: verify passes and says how many bytes it ignored', async () => {
    const journal = await completedJournal();
    const size = statSync(journal).size;
    truncateSync(journal, size - 20);
    const lastLine = readFileSync(journal, 'utf8').split('\n').at(-1) ?? '';
    const result = await runCli('verify', journal);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`torn last line ignored: ${Buffer.byteLength(lastLine)} bytes`);
    expect(result.stdout).toContain('the agent has not ended');
  });

  it('a flipped byte in the middle is reported as the first bad event, with exit 1', async () => {
    const journal = await completedJournal();
    const lines = readFileSync(journal, 'utf8').split('\n');
    const target = 7;
    const line = lines[target] ?? '';
    const at = line.indexOf('"round":1') + '"round":'.length;
    lines[target] = `${line.slice(0, at)}2${line.slice(at + 1)}`;
    writeFileSync(journal, lines.join('\n'));
    const result = await runCli('verify', journal);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      new RegExp(`^seq ${target}: bad_hash: Event ${target} \\(\\w+\\) does not hash`),
    );

    const json = await runCli('verify', journal, '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      events: target,
      firstBad: { seq: target, reason: 'bad_hash' },
    });
  });

  it('a byte flipped into invalid JSON is reported at the line it hit', async () => {
    const journal = await completedJournal();
    const bytes = readFileSync(journal);
    const target = 4;
    const lineStart = Buffer.byteLength(
      `${bytes.toString('utf8').split('\n').slice(0, target).join('\n')}\n`,
    );
    bytes[lineStart] = '#'.charCodeAt(0);
    writeFileSync(journal, bytes);
    const result = await runCli('verify', journal);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^seq ${target}: damaged_line: Line ${target + 1}: `));
  });

  it('a missing file is an error naming the path', async () => {
    const result = await runCli('verify', project.path('nope.jsonl'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('journal_not_found');
  });
});

describe('troupe resume', () => {
  it('a journal whose agent ended is reported, not run again, and nothing is appended', async () => {
    const journal = project.path('run.jsonl');
    const first = await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    const before = readFileSync(journal);
    const result = await runCli('resume', journal);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('provider: simulated (recorded in the journal');
    expect(result.stderr).toContain('the agent had already ended: nothing is run again');
    expect(JSON.parse(result.stdout)).toEqual(JSON.parse(first.stdout));
    expect(readFileSync(journal)).toEqual(before);
  });

  it('continues after a torn last line: the tail is cut, the call it held runs once, and verify passes', async () => {
    const journal = project.path('run.jsonl');
    await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    const complete = readFileSync(journal, 'utf8');
    const lines = complete.split('\n');
    // Keep everything before the ToolCall that reads notes/b.txt, and half of that line.
    const cut = lines.findIndex((line) => line.includes('"type":"ToolCall"') && line.includes('notes/b.txt'));
    const kept = `${lines.slice(0, cut).join('\n')}\n`;
    const torn = (lines[cut] ?? '').slice(0, 50);
    writeFileSync(journal, kept + torn);

    const result = await runCli('resume', journal, '--json');
    expect(result.code).toBe(0);
    const out = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(out[0]).toMatchObject({
      type: 'Run',
      command: 'resume',
      simulated: true,
      resume: {
        events: cut,
        truncatedBytes: Buffer.byteLength(torn),
        definitionChanged: false,
        ended: false,
      },
    });
    expect(out.at(-1)).toMatchObject({ type: 'Outcome', status: 'completed' });

    const events = journalEvents(journal);
    expect(events.find((event) => event.type === 'Resumed')).toMatchObject({
      truncatedBytes: Buffer.byteLength(torn),
      pendingCallIds: [],
    });
    const reads = events.filter((event) => event.type === 'ToolCall' && event.name === 'read_file');
    expect(reads.map((event) => (event.type === 'ToolCall' ? event.args?.path : undefined))).toEqual([
      'a.md',
      'notes/b.txt',
    ]);
    const verified = await runCli('verify', journal);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(
      /^ok: \d+ events, \d+ model requests in 2 rounds verified\nthe agent completed\n$/,
    );
  });

  it('says the definition changed since the run started, and continues with the recorded one', async () => {
    const journal = project.path('run.jsonl');
    await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    const lines = readFileSync(journal, 'utf8').split('\n');
    writeFileSync(journal, `${lines.slice(0, 3).join('\n')}\n`);
    project.write('.troupe/agents/reader.md', READER.replace('You read', 'You carefully read'));
    const result = await runCli('resume', journal);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'changed since the run started; the agent continues with the definition recorded in its journal, not the file',
    );
    // The system prompt is the recorded one, so every round still verifies.
    expect((await runCli('verify', journal)).code).toBe(0);
  });

  it('refuses a journal that does not verify and leaves it untouched', async () => {
    const journal = project.path('run.jsonl');
    await runCli('run', 'reader', '--task', TASK, '--cwd', project.root, '--journal', journal);
    const lines = readFileSync(journal, 'utf8').split('\n');
    // Drop the terminal event so the agent looks unfinished, and damage an earlier one.
    const unfinished = lines.slice(0, -2);
    unfinished[3] = (unfinished[3] ?? '').replace('"round":1', '"round":9');
    writeFileSync(journal, `${unfinished.join('\n')}\n`);
    const before = readFileSync(journal);
    const result = await runCli('resume', journal);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/journal_corrupt: .*seq 3: bad_hash: .*troupe verify/);
    expect(readFileSync(journal)).toEqual(before);
  });

  it('a directory is handed to the fan-out resume', async () => {
    const result = await runCli('resume', project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('not_a_run_dir');
  });
});

describe('provider and model choice', () => {
  it('picks openai or anthropic when their key is set, and simulated otherwise', () => {
    expect(chooseProvider(undefined, {})).toMatchObject({ name: 'simulated', simulated: true });
    expect(chooseProvider(undefined, { OPENAI_API_KEY: 'sk-x' })).toMatchObject({
      name: 'openai',
      simulated: false,
      notice: 'provider: openai (OPENAI_API_KEY is set)',
    });
    expect(chooseProvider(undefined, { ANTHROPIC_API_KEY: 'sk-ant-x' })).toMatchObject({
      name: 'anthropic',
      notice: 'provider: anthropic (ANTHROPIC_API_KEY is set)',
    });
    expect(() => chooseProvider('gemini', {})).toThrow(/unknown|Expected a provider name/);
    expect(() => chooseProvider('openai', {})).toThrow(/API key/);
  });

  it('uses --model, else the definition model, else the provider default; the simulated model ignores aliases', () => {
    expect(resolveModel('openai', 'gpt-4.1', 'sonnet')).toBe('gpt-4.1');
    expect(resolveModel('openai', undefined, 'gpt-5')).toBe('gpt-5');
    expect(resolveModel('anthropic', undefined, 'default')).toBe('claude-sonnet-4-6');
    expect(resolveModel('openai', undefined, 'inherit')).toBe('gpt-4.1-mini');
    expect(resolveModel('simulated', undefined, 'sonnet')).toBe('simulated');
  });
});

describe('live output', () => {
  it('formats counts the way a person reads them', () => {
    expect([950, 1234, 12_345, 3_400_000].map(formatTokens)).toEqual(['950', '1.2k', '12k', '3.4M']);
    // Half up on the shown digits (toFixed gave 2.5M: 2.55 is 2.5499... as a double), no 1000k.
    expect([1_250, 9_960, 999_499, 999_500, 2_550_000].map(formatTokens)).toEqual([
      '1.3k',
      '10k',
      '999k',
      '1.0M',
      '2.6M',
    ]);
  });

  it('shows a failed tool call with its reason once and hides successful results', () => {
    const base = { agentId: 'a', seq: 1, ts: '', prev: '', hash: '', round: 2, callId: 'c', name: 'grep' };
    const result = {
      ...base,
      type: 'ToolResult' as const,
      projectionAccepted: true,
      stateUpdates: [],
      displayedStateKeys: [],
    };
    expect(progressLine({ ...result, ok: true, text: 'found' })).toBeUndefined();
    expect(progressLine({ ...result, ok: false, text: 'grep failed: bad\npattern' })).toBe(
      'round 2 · grep failed: bad pattern',
    );
    expect(progressLine({ ...result, ok: false, text: 'Path /etc is outside the working directory' })).toBe(
      'round 2 · grep failed: Path /etc is outside the working directory',
    );
  });

  it("marks with ~ only the side of a request's usage troupe estimated", () => {
    const base = { agentId: 'a', seq: 1, ts: '', prev: '', hash: '', round: 1, step: 1 };
    const receipt = (usage: Record<string, unknown>) =>
      progressLine({
        ...base,
        type: 'ProviderReceipt' as const,
        stopReason: 'end_turn' as const,
        receipt: {
          provider: 'openai',
          model: 'm',
          requests: 1,
          usage: { inputTokens: 4321, outputTokens: 12, cachedInputTokens: 0, reasoningTokens: 0, ...usage },
          latencyMs: 5,
          httpStatus: 200,
          retries: 0,
          costUsd: undefined,
        },
      });
    expect(receipt({ estimated: true, estimatedSide: 'output' })).toBe(
      'round 1 · step 1 · 4.3k tokens in · ~12 out (estimated: the server reported no readable output count) · 5 ms',
    );
    expect(receipt({ estimated: true, estimatedSide: 'input' })).toContain('~4.3k tokens in · 12 out');
    expect(receipt({ estimated: true })).toContain(
      '~4.3k tokens in · ~12 out (estimated: no usage reported)',
    );
    expect(receipt({})).toContain('4.3k tokens in · 12 out · 5 ms');
  });

  it('a Ctrl-C caught as the watch stops still ends the process instead of being dropped', async () => {
    const { code, stdout } = await runScript(
      fileURLToPath(new URL('../fixtures/cli/signal-as-run-ends.ts', import.meta.url)),
      { cwd: repoRoot, env: project.env() },
    );
    expect(stdout).toBe('');
    expect(code).toBe('SIGINT');
  });

  it('a first interrupt calls the cancel handler and a second the exit handler, with the signal', () => {
    const listeners = new Map<string, (signal: 'SIGINT' | 'SIGTERM') => void>();
    const calls: string[] = [];
    const stop = watchInterrupts(
      () => calls.push('cancel'),
      (signal) => calls.push(`exit ${signal}`),
      {
        on: (signal, listener) => listeners.set(signal, listener),
        off: (signal) => listeners.delete(signal),
      },
    );
    listeners.get('SIGINT')?.('SIGINT');
    expect(calls).toEqual(['cancel']);
    listeners.get('SIGTERM')?.('SIGTERM');
    expect(calls).toEqual(['cancel', 'exit SIGTERM']);
    // The exit handler runs with no listener left, so a re-raised signal takes its default action.
    expect(listeners.size).toBe(0);
    stop();
  });
});
