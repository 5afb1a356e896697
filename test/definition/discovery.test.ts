import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentDirs, discoverAgents, getAgent } from '../../src/definition/discovery.ts';
import { hasErrorCode } from '../../src/errors.ts';
import { definitionText, TempTree } from './helpers.ts';

/**
 * Layout used by most tests:
 *   <root>/.troupe/agents/          above the git root: never searched
 *   <root>/repo/.git/               the git root
 *   <root>/repo/.troupe/agents/     project (far)
 *   <root>/repo/pkg/.troupe/agents/ project (near)
 *   <root>/repo/pkg/app/            cwd
 *   <root>/home/                    HOME
 */
let tree: TempTree;
let cwd: string;
let home: string;

beforeEach(() => {
  tree = new TempTree();
  tree.mkdir('repo/.git');
  cwd = tree.mkdir('repo/pkg/app');
  home = tree.mkdir('home');
});

afterEach(() => tree.remove());

function agent(dir: string, name: string, extra = ''): string {
  return tree.write(`${dir}/${name}.md`, definitionText(name, extra, `Body from ${dir}.`));
}

async function winnerOf(name: string, options: { compat?: boolean } = {}) {
  const found = await discoverAgents({ cwd, home, ...options });
  return found.agents.find((candidate) => candidate.definition.name === name);
}

describe('agent directories', () => {
  it('walks from cwd to the git root, then user, then compat, highest precedence first', async () => {
    const dirs = await agentDirs({ cwd, home });
    const r = (path: string) => tree.path(path);
    expect(dirs).toEqual([
      { dir: r('repo/pkg/app/.troupe/agents'), source: 'project' },
      { dir: r('repo/pkg/.troupe/agents'), source: 'project' },
      { dir: r('repo/.troupe/agents'), source: 'project' },
      { dir: r('home/.troupe/agents'), source: 'user' },
      { dir: r('repo/pkg/app/.claude/agents'), source: 'compat' },
      { dir: r('repo/pkg/.claude/agents'), source: 'compat' },
      { dir: r('repo/.claude/agents'), source: 'compat' },
      { dir: r('home/.claude/agents'), source: 'compat' },
    ]);
  });

  it('searches only cwd when there is no git root above it', async () => {
    const lone = tree.mkdir('lone/deep');
    const dirs = await agentDirs({ cwd: lone, home, compat: false });
    expect(dirs.map((entry) => entry.dir)).toEqual([
      join(lone, '.troupe/agents'),
      tree.path('home/.troupe/agents'),
    ]);
  });

  it('accepts a .git file (worktree) as the git root', async () => {
    const inner = tree.mkdir('wt/sub');
    writeFileSync(tree.path('wt/.git'), 'gitdir: /elsewhere\n');
    const dirs = await agentDirs({ cwd: inner, home, compat: false });
    expect(dirs.map((entry) => entry.dir)).toContain(tree.path('wt/.troupe/agents'));
  });

  it('counts a home directory inside the project walk once, as a project dir', async () => {
    const dirs = await agentDirs({ cwd, home: tree.path('repo'), compat: false });
    expect(dirs.filter((entry) => entry.dir === tree.path('repo/.troupe/agents'))).toEqual([
      { dir: tree.path('repo/.troupe/agents'), source: 'project' },
    ]);
  });

  it('uses HOME when no home directory is given', async () => {
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      agent('home/.troupe/agents', 'from-home');
      expect((await discoverAgents({ cwd })).agents.map((found) => found.definition.name)).toContain(
        'from-home',
      );
    } finally {
      process.env.HOME = saved;
    }
  });
});

describe('precedence', () => {
  it('a closer project dir wins over a farther one, and the loser is reported as shadowed', async () => {
    const far = agent('repo/.troupe/agents', 'x');
    const near = agent('repo/pkg/.troupe/agents', 'x');
    const found = await discoverAgents({ cwd, home });
    const winner = found.agents.find((candidate) => candidate.definition.name === 'x');
    expect(winner?.definition.path).toBe(near);
    expect(winner?.shadows).toEqual([far]);
    expect(found.shadowed).toEqual([{ name: 'x', path: far, source: 'project', shadowedBy: near }]);
    // At the loser's `name: x` (before: 1:1, its `---` line).
    expect(found.problems).toContainEqual(
      expect.objectContaining({ code: 'shadowed', severity: 'warning', file: far, line: 2, column: 7 }),
    );
  });

  it('project wins over user, user over compat, compat over built-in', async () => {
    agent('repo/.troupe/agents', 'a');
    agent('home/.troupe/agents', 'a');
    agent('home/.troupe/agents', 'b');
    agent('repo/.claude/agents', 'b');
    agent('repo/.claude/agents', 'general-purpose');
    expect((await winnerOf('a'))?.definition.source).toBe('project');
    expect((await winnerOf('a'))?.shadows).toEqual([tree.path('home/.troupe/agents/a.md')]);
    expect((await winnerOf('b'))?.definition.source).toBe('user');
    const general = await winnerOf('general-purpose');
    expect(general?.definition.source).toBe('compat');
    expect(general?.shadows).toEqual(['builtin:general-purpose']);
  });

  it('compat dirs follow the same walk, closer first, and the home compat dir comes last', async () => {
    agent('home/.claude/agents', 'c');
    agent('repo/.claude/agents', 'c');
    const near = agent('repo/pkg/app/.claude/agents', 'c');
    const winner = await winnerOf('c');
    expect(winner?.definition.path).toBe(near);
    expect(winner?.shadows).toEqual([
      tree.path('repo/.claude/agents/c.md'),
      tree.path('home/.claude/agents/c.md'),
    ]);
  });

  it('ignores dirs above the git root', async () => {
    agent('.troupe/agents', 'above');
    expect(await winnerOf('above')).toBeUndefined();
  });

  it('skips compat dirs when compat is off', async () => {
    agent('repo/.claude/agents', 'claude-only');
    agent('home/.claude/agents', 'claude-home');
    expect(await winnerOf('claude-only')).toBeDefined();
    expect(await winnerOf('claude-only', { compat: false })).toBeUndefined();
    expect(await winnerOf('claude-home', { compat: false })).toBeUndefined();
  });

  it('reads compat files leniently and troupe files strictly', async () => {
    const broken = 'description: Use when: needed\n';
    tree.write('repo/.claude/agents/loose.md', `---\nname: loose\n${broken}---\nbody\n`);
    tree.write('repo/.troupe/agents/tight.md', `---\nname: tight\n${broken}---\nbody\n`);
    const found = await discoverAgents({ cwd, home });
    expect(found.agents.map((candidate) => candidate.definition.name)).toContain('loose');
    expect(found.problems).toContainEqual(
      expect.objectContaining({ code: 'parse_error', file: tree.path('repo/.troupe/agents/tight.md') }),
    );
  });

  it('lets the first file (by name) win between two definitions of one name in one dir', async () => {
    tree.write('repo/.troupe/agents/1-first.md', definitionText('dup'));
    tree.write('repo/.troupe/agents/2-second.md', definitionText('dup'));
    expect((await winnerOf('dup'))?.definition.path).toBe(tree.path('repo/.troupe/agents/1-first.md'));
  });

  it('includes the built-ins last, and leaves them out on request', async () => {
    const found = await discoverAgents({ cwd, home });
    expect(found.agents.map((candidate) => candidate.definition.path)).toEqual([
      'builtin:general-purpose',
      'builtin:worker',
    ]);
    expect(found.problems).toEqual([]);
    expect((await discoverAgents({ cwd, home, builtins: false })).agents).toEqual([]);
  });

  it('orders the agents by source precedence, then name', async () => {
    agent('home/.troupe/agents', 'u');
    agent('repo/.troupe/agents', 'z');
    agent('repo/.troupe/agents', 'm');
    const found = await discoverAgents({ cwd, home, builtins: false });
    expect(found.agents.map((candidate) => candidate.definition.name)).toEqual(['m', 'z', 'u']);
  });
});

describe('enabled: false', () => {
  it('hides the definition and the lower ones it shadows', async () => {
    agent('repo/.troupe/agents', 'general-purpose', 'enabled: false\n');
    const found = await discoverAgents({ cwd, home });
    expect(found.agents.map((candidate) => candidate.definition.name)).toEqual(['worker']);
    expect(found.disabled.map((candidate) => candidate.definition.path)).toEqual([
      tree.path('repo/.troupe/agents/general-purpose.md'),
    ]);
    await expect(getAgent('general-purpose', { cwd, home })).rejects.toThrow(/enabled: false/);
  });

  it('a lower disabled definition does not hide a higher enabled one', async () => {
    agent('repo/pkg/.troupe/agents', 'x');
    agent('home/.troupe/agents', 'x', 'enabled: false\n');
    expect((await winnerOf('x'))?.definition.source).toBe('project');
  });
});

describe('broken files and dirs', () => {
  it('treats a missing or unreadable agents dir as empty', async () => {
    writeFileSync(tree.path('repo/pkg/.troupe'), 'not a directory');
    const found = await discoverAgents({ cwd, home, builtins: false });
    expect(found.agents).toEqual([]);
    expect(found.problems).toEqual([]);
  });

  it('reports an unreadable definition file as io_error', async () => {
    mkdirSync(tree.path('repo/.troupe/agents'), { recursive: true });
    symlinkSync(tree.path('nowhere.md'), tree.path('repo/.troupe/agents/dangling.md'));
    mkdirSync(tree.path('repo/.troupe/agents/dir.md'));
    const found = await discoverAgents({ cwd, home, builtins: false });
    expect(found.problems.map((problem) => [problem.code, problem.file])).toEqual([
      ['io_error', tree.path('repo/.troupe/agents/dangling.md')],
    ]);
  });

  it('skips README.md in agent dirs', async () => {
    tree.write('repo/.claude/agents/README.md', '# Our agents\n');
    expect((await discoverAgents({ cwd, home, builtins: false })).problems).toEqual([]);
  });

  it('a broken higher definition takes its name: getAgent says why instead of falling back', async () => {
    tree.write(
      'repo/.troupe/agents/worker.md',
      '---\nname: worker\ndescription: d\nmaxSteps: 0\n---\nbody\n',
    );
    const found = await discoverAgents({ cwd, home });
    expect(found.agents.map((candidate) => candidate.definition.name)).toEqual(['general-purpose']);
    expect(found.invalid).toMatchObject([{ name: 'worker', source: 'project' }]);
    expect(found.shadowed).toMatchObject([{ name: 'worker', path: 'builtin:worker' }]);
    const error = await getAgent('worker', { cwd, home }).catch((caught: unknown) => caught);
    expect(hasErrorCode(error, 'invalid_definition')).toBe(true);
    expect(String(error)).toContain('maxSteps');
  });
});

describe('getAgent', () => {
  it('returns the winning definition', async () => {
    agent('repo/.troupe/agents', 'helper');
    expect((await getAgent('helper', { cwd, home })).path).toBe(tree.path('repo/.troupe/agents/helper.md'));
  });

  it('throws unknown_agent listing the available names', async () => {
    const error = await getAgent('missing', { cwd, home }).catch((caught: unknown) => caught);
    expect(hasErrorCode(error, 'unknown_agent')).toBe(true);
    expect(String(error)).toContain('available: general-purpose, worker');
    expect(error).toMatchObject({ fields: { name: 'missing', available: ['general-purpose', 'worker'] } });
  });

  it('unknown_agent suggests a close name and lists at most 20 names, keeping them all in the error', async () => {
    const names = Array.from({ length: 30 }, (_, index) => `agent-${String(index).padStart(2, '0')}`);
    for (const name of [...names, 'python-pro']) agent('repo/.troupe/agents', name);
    const error = await getAgent('pyhton-pro', { cwd, home }).catch((caught: unknown) => caught);
    expect(hasErrorCode(error, 'unknown_agent')).toBe(true);
    const message = String(error);
    expect(message).toContain(
      'found `pyhton-pro` (did you mean `python-pro`?); available: agent-00, agent-01',
    );
    expect(message).toContain('agent-19 and 13 more (`troupe agents list`)');
    expect(message).not.toContain('agent-20');
    expect((error as { fields: { available: string[] } }).fields.available).toHaveLength(33);
  });

  it('says why a file named after the agent gave no agent (too large to read)', async () => {
    tree.write(
      'repo/.troupe/agents/huge.md',
      `---\nname: huge\ndescription: big\n---\n${'x'.repeat(1_100_000)}\n`,
    );
    const error = await getAgent('huge', { cwd, home }).catch((caught: unknown) => caught);
    expect(hasErrorCode(error, 'unknown_agent')).toBe(true);
    expect(String(error)).toMatch(
      /found `huge` \(.*huge\.md:1:1: Expected a definition file of at most 1048576 bytes/,
    );
  });
});
