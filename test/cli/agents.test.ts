import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { definitionText, repoRoot, TempTree } from '../definition/helpers.ts';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function run(...argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

let tree: TempTree;
let savedHome: string | undefined;
let project: string;

beforeEach(() => {
  tree = new TempTree();
  savedHome = process.env.HOME;
  // Keep the developer's own ~/.troupe and ~/.claude agents out of these tests.
  process.env.HOME = tree.mkdir('home');
  tree.mkdir('project/.git');
  project = tree.path('project');
});

afterEach(() => {
  process.env.HOME = savedHome;
  tree.remove();
});

describe('troupe agents list', () => {
  it('prints name, source, path, tools and model, closest first', async () => {
    tree.write(
      'project/.troupe/agents/reviewer.md',
      definitionText('reviewer', 'tools: Read, Grep\nmodel: sonnet\n'),
    );
    const result = await run('agents', 'list', '--cwd', project);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]?.split(/\s+/)).toEqual(['NAME', 'SOURCE', 'PATH', 'TOOLS', 'MODEL']);
    expect(lines[1]?.split(/\s{2,}/)).toEqual([
      'reviewer',
      'project',
      '.troupe/agents/reviewer.md',
      'read_file, grep',
      'sonnet',
    ]);
    expect(lines.slice(2).map((line) => line.split(/\s+/)[0])).toEqual(['general-purpose', 'worker']);
  });

  it('list keeps a long tools list to one short cell, saying how many more', async () => {
    const tools = Array.from({ length: 19 }, (_, i) => `mcp__nia__tool_number_${i}`).join(', ');
    tree.write('project/.troupe/agents/oracle.md', definitionText('oracle', `tools: ${tools}\n`));
    const result = await run('agents', 'list', '--cwd', project);
    const line = result.stdout.split('\n').find((l) => l.startsWith('oracle')) ?? '';
    expect(line).toMatch(/mcp__nia__tool_number_0, .*… \d+ more/);
    expect(Math.max(...result.stdout.split('\n').map((l) => l.length))).toBeLessThan(160);
  });

  it('TOOLS shows the entries the agent gets and which are ignored, as show and validate judge them', async () => {
    tree.write(
      'project/.troupe/agents/copilot.md',
      definitionText('copilot', 'tools: codebase, githubRepo, edit/editFiles\n'),
    );
    tree.write('project/.troupe/agents/mixed.md', definitionText('mixed', 'tools: Read, Frob, Grep\n'));
    const result = await run('agents', 'list', '--cwd', project);
    const cell = (name: string) =>
      result.stdout
        .split('\n')
        .find((line) => line.startsWith(`${name} `))
        ?.split(/\s{2,}/)[3];
    // Before: `codebase, githubRepo, edit/editFiles` and `Read, Frob, Grep`, as if all were tools.
    expect(cell('copilot')).toBe('none (ignored: codebase, githubRepo, edit/editFiles)');
    expect(cell('mixed')).toBe('read_file, grep (ignored: Frob)');
    const show = await run('agents', 'show', 'copilot', '--cwd', project);
    expect(show.stderr).toContain('warning no_tools');
    const entries = JSON.parse((await run('agents', 'list', '--json', '--cwd', project)).stdout) as {
      name: string;
      tools: string[] | null;
      ignoredTools: string[];
    }[];
    expect(entries.find((entry) => entry.name === 'mixed')).toMatchObject({
      tools: ['Read', 'Frob', 'Grep'],
      ignoredTools: ['Frob'],
    });
  });

  it('TOOLS and --json toolsGiven are the tools a fan-out run of the agent gets', async () => {
    tree.write(
      'project/.troupe/agents/architect.md',
      definitionText('architect', 'tools: Task, Grep, Read, Edit, MultiEdit, Frob\n'),
    );
    const list = await run('agents', 'list', '--json', '--cwd', project);
    const entry = (JSON.parse(list.stdout) as { name: string; toolsGiven: string[] | null }[]).find(
      (candidate) => candidate.name === 'architect',
    );
    // What the run below records: Task is spawn_agent and await_agents, Edit and MultiEdit one tool.
    // Before: the cell read `Task, Grep, Read, Edit, MultiEdit`, five tools as written.
    const given = ['grep', 'read_file', 'search_replace', 'spawn_agent', 'await_agents'];
    expect([...(entry?.toolsGiven ?? [])].sort()).toEqual([...given].sort());
    const table = await run('agents', 'list', '--cwd', project);
    const cell = table.stdout.split('\n').find((line) => line.startsWith('architect '));
    expect(cell).toContain(`  ${entry?.toolsGiven?.join(', ')} (ignored: Frob)  `);

    const plan = tree.write(
      'project/plan.yaml',
      'cwd: .\nthreads: 1\nruns:\n  - agent: architect\n    task: Plan it.\n',
    );
    const out = tree.path('run');
    const fanout = await run('fanout', plan, '--json', '--out', out);
    expect(fanout.code, fanout.stderr).toBe(0);
    const journals = readdirSync(join(out, 'journals'));
    const started = JSON.parse(
      readFileSync(join(out, 'journals', journals[0] ?? ''), 'utf8').split('\n')[0] ?? '{}',
    ) as {
      type: string;
      toolSpecs: { name: string }[];
    };
    expect(started.type).toBe('Started');
    expect(started.toolSpecs.map((spec) => spec.name)).toEqual(entry?.toolsGiven);
  });

  it('--json prints {name, source, path, description, tools, toolsGiven, ignoredTools, model, shadows}', async () => {
    const mine = tree.write('project/.troupe/agents/worker.md', definitionText('worker', 'tools: []\n'));
    const result = await run('agents', 'list', '--json', '--cwd', project);
    const entries = JSON.parse(result.stdout) as Record<string, unknown>[];
    expect(entries).toEqual([
      {
        name: 'worker',
        source: 'project',
        path: mine,
        description: 'The worker agent.',
        tools: [],
        toolsGiven: [],
        ignoredTools: [],
        model: 'default',
        shadows: ['builtin:worker'],
      },
      expect.objectContaining({ name: 'general-purpose', source: 'builtin', tools: null, shadows: [] }),
    ]);
  });

  it('--no-compat leaves out .claude/agents, which is read by default', async () => {
    tree.write(
      'project/.claude/agents/cc.md',
      '---\nname: cc\ndescription: Use when: asked\ntools: *\n---\nbody\n',
    );
    const names = async (...flags: string[]) =>
      (
        JSON.parse((await run('agents', 'list', '--json', '--cwd', project, ...flags)).stdout) as {
          name: string;
        }[]
      ).map((entry) => entry.name);
    expect(await names()).toContain('cc');
    expect(await names('--no-compat')).not.toContain('cc');
  });

  it('reports broken definitions on stderr and still lists the rest', async () => {
    tree.write('project/.troupe/agents/bad.md', '---\nname: bad\ndescription: d\nmaxSteps: 0\n---\nbody\n');
    const result = await run('agents', 'list', '--cwd', project);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('.troupe/agents/bad.md:4:11: error invalid_field:');
    expect(result.stdout).toContain('general-purpose');
  });

  it('notes shadowed and disabled definitions under the table', async () => {
    tree.write('project/.troupe/agents/gp.md', definitionText('general-purpose', 'enabled: false\n'));
    tree.write('project/.troupe/agents/w.md', definitionText('worker'));
    const result = await run('agents', 'list', '--cwd', project);
    expect(result.stdout).toContain('(worker in builtin:worker is shadowed by .troupe/agents/w.md)');
    expect(result.stdout).toContain('(general-purpose is disabled by .troupe/agents/gp.md)');
  });
});

describe('troupe agents show', () => {
  it('prints the resolved definition as a definition file with defaults filled in', async () => {
    const result = await run('agents', 'show', 'worker', '--cwd', project);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('# source: builtin (builtin:worker)');
    expect(result.stdout).toMatch(/^maxSteps: 32$/m);
    expect(result.stdout).toMatch(/^tools: "\*"$/m);
    expect(result.stdout).toContain('  tool: complete_task');
    const shown = tree.write(
      'project/.troupe/agents/copy.md',
      result.stdout.replace('name: worker', 'name: copy'),
    );
    const copy = await run('agents', 'validate', shown);
    expect(copy.code).toBe(0);
  });

  it('--json prints every field, null for the unset ones', async () => {
    const result = await run('agents', 'show', 'general-purpose', '--json', '--cwd', project);
    const shown = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({
      name: 'general-purpose',
      tools: null,
      completionRequirement: null,
      outputSchema: null,
      maxSteps: 32,
      promptMode: 'extend',
      shadows: [],
    });
  });

  it('fails with unknown_agent and the available names', async () => {
    const result = await run('agents', 'show', 'nobody', '--cwd', project);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('troupe: unknown_agent:');
    expect(result.stderr).toContain('available: general-purpose, worker');
  });

  it('--prompt prints the assembled system prompt: base template, body, tool names', async () => {
    const result = await run('agents', 'show', 'worker', '--prompt', '--cwd', project);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('You are a worker agent in an orchestrated team.');
    expect(result.stdout).toContain('<user_info>');
    expect(result.stdout).toContain(`Working directory: ${project}`);
    expect(result.stdout).toContain('`complete_task`');
  });
});

describe('troupe agents validate', () => {
  it('prints file:line:column: severity code: message (path) and exits 1 on errors', async () => {
    const bad = tree.write(
      'defs/bad.md',
      '---\nname: bad\ndescription: d\nmaxSteps: 0\nshiny: 1\n---\nbody\n',
    );
    tree.write('defs/nested/good.md', definitionText('good'));
    tree.write('defs/notes.txt', 'ignored');
    const result = await run('agents', 'validate', tree.path('defs'));
    expect(result.code).toBe(1);
    expect(result.stdout.split('\n')).toEqual([
      `${bad}:4:11: error invalid_field: Expected \`maxSteps\` to be a positive integer, got \`0\` (number) (/maxSteps)`,
      `${bad}:5:1: warning unknown_key: Unknown key \`shiny\`; kept in \`extra\`, otherwise ignored (/shiny)`,
      '2 file(s) checked: 1 ok, 1 with errors (1 error(s), 1 warning(s))',
      '',
    ]);
  });

  it('warns, with both paths, when two files of one directory define the same name', async () => {
    const first = tree.write('project/.claude/agents/code-reviewer.md', definitionText('reviewer'));
    const second = tree.write(
      'project/.claude/agents/reviewer.md',
      '---\nname: Reviewer\ndescription: Reviews: code\n---\nbody\n',
    );
    tree.write('project/other/reviewer.md', definitionText('reviewer'));
    const result = await run('agents', 'validate', '--json', project);
    expect(result.code).toBe(0);
    const entries = JSON.parse(result.stdout) as { file: string; warnings: { code: string }[] }[];
    const shadowed = entries.flatMap(({ file, warnings }) =>
      warnings.filter((warning) => warning.code === 'shadowed').map((warning) => ({ file, ...warning })),
    );
    // Before: none; only `agents list` noted that reviewer.md is never used. The file in another
    // directory is another agents directory's business (precedence), not a duplicate.
    expect(shadowed).toEqual([
      {
        file: second,
        code: 'shadowed',
        message: `Agent \`reviewer\` is also defined by ${first} in the same directory; discovery takes the first file in name order, so ${second} is never used: rename one agent or remove a file`,
        // At the file's `name: Reviewer` (before: 1:1, the file's `---`).
        line: 2,
        column: 7,
        path: '/name',
      },
    ]);
    const list = await run('agents', 'list', '--cwd', project);
    expect(list.stdout).toContain(
      '(reviewer in .claude/agents/reviewer.md is shadowed by .claude/agents/code-reviewer.md)',
    );
  });

  it('exits 0 when there are only warnings', async () => {
    const file = tree.write('w.md', definitionText('w', 'memory: project\n'));
    const result = await run('agents', 'validate', file);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('warning unknown_key');
  });

  it('reports a model that is no alias at its line with the allowed forms, and accepts an id it does not know', async () => {
    const typo = tree.write('defs/typo.md', definitionText('typo', 'model: sonet\n'));
    tree.write('defs/newer.md', definitionText('newer', 'model: claude-opus-9-9\n'));
    const result = await run('agents', 'validate', tree.path('defs'));
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toEqual([
      `${typo}:4:8: warning unknown_model: Expected \`model\` to be an alias (\`opus\`, \`sonnet\`, \`haiku\`, \`opusplan\`, \`inherit\`, \`default\`) or a full model id (\`claude-sonnet-4-6\`, \`gpt-5\`), found \`sonet\` (did you mean \`sonnet\`?): no alias troupe knows; it is sent to the provider as written unless a \`modelMap\` maps it (/model)`,
      '2 file(s) checked: 2 ok, 0 with errors (0 error(s), 1 warning(s))',
      '',
    ]);
  });

  it('--json prints {file, ok, name, errors, warnings} per file', async () => {
    const file = tree.write('defs/x.md', '---\nname: X Y\ndescription: d\n---\nbody\n');
    const result = await run('agents', 'validate', '--json', file);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual([
      {
        file,
        ok: false,
        name: 'x-y',
        errors: [
          {
            code: 'invalid_field',
            message: expect.stringContaining('for example `x-y`'),
            line: 2,
            column: 7,
            path: '/name',
          },
        ],
        warnings: [],
      },
    ]);
  });

  it('reads files leniently with --lenient, and under .claude/agents without it', async () => {
    const text = '---\nname: Loose One\ndescription: Use when: asked\n---\nbody\n';
    const plain = tree.write('defs/loose.md', text);
    const claude = tree.write('repo/.claude/agents/loose.md', text);
    expect((await run('agents', 'validate', plain)).code).toBe(1);
    const lenient = await run('agents', 'validate', '--lenient', '--json', plain);
    expect(lenient.code).toBe(0);
    expect(JSON.parse(lenient.stdout)[0]).toMatchObject({ ok: true, name: 'loose-one' });
    const auto = await run('agents', 'validate', '--json', claude);
    expect(auto.code).toBe(0);
    expect(
      (JSON.parse(auto.stdout)[0] as { warnings: { code: string }[] }).warnings.map((w) => w.code),
    ).toEqual(['lenient_parse', 'name_slugified']);
  });

  it('reports a path that does not exist as io_error', async () => {
    const result = await run('agents', 'validate', tree.path('nope.md'));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${tree.path('nope.md')}:1:1: error io_error:`);
  });

  it('fails when a directory holds no .md files', async () => {
    const result = await run('agents', 'validate', tree.mkdir('empty'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no .md files found');
  });
});

describe('file names and contents that would drive the terminal', () => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
  const hostile = '\u001b]0;PWNED\u0007\u001b[2J# Title';

  it('list, show and validate print no escape sequence from a file name or a first line', async () => {
    tree.write('project/.claude/agents/broken.md', `${hostile}\n`);
    tree.write(
      'project/.claude/agents/\u001b[31mred.md',
      definitionText('red', 'tools: Read, NotebookEdit\n'),
    );
    const list = await run('agents', 'list', '--cwd', project);
    expect(list.stderr).toContain('.claude/agents/broken.md:1:1: error parse_error:');
    expect(list.stderr).toContain('found `# Title`');
    expect(list.stdout).toContain('.claude/agents/red.md');
    const show = await run('agents', 'show', 'red', '--cwd', project);
    expect(show.stderr).toContain('.claude/agents/red.md:4:');
    const validate = await run('agents', 'validate', tree.path('project/.claude/agents'));
    expect(validate.code).toBe(1);
    for (const text of [list.stdout, list.stderr, show.stderr, validate.stdout, validate.stderr])
      expect(text).not.toMatch(CONTROL);
  });
});

describe('the real bin', () => {
  it('validates the corpus leniently from the repo root', () => {
    const child = spawnSync(
      process.execPath,
      [
        join(repoRoot, 'bin/troupe.mjs'),
        'agents',
        'validate',
        'test/fixtures/corpus/agent-definitions',
        '--lenient',
      ],
      { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 },
    );
    // SOURCES.md and the four README-style files have no frontmatter: they are the errors.
    expect(child.status).toBe(1);
    const lines = child.stdout.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(
      /^264 file\(s\) checked: 259 ok, 5 with errors \(5 error\(s\), \d+ warning\(s\)\)$/,
    );
    const problems = lines.slice(0, -1);
    expect(problems.length).toBeGreaterThan(5);
    for (const line of problems) {
      expect(line).toMatch(
        /^test\/fixtures\/corpus\/agent-definitions\/.+\.md:\d+:\d+: (error|warning) [a-z_]+: .+$/,
      );
    }
    expect(problems.filter((line) => line.includes(': error '))).toHaveLength(5);
  });
});
