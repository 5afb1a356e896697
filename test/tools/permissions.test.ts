import { mkdir, mkdtemp, readFile, realpath, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PermissionMode } from '../../src/definition/types.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import {
  buildPermissionGate,
  effectiveMode,
  type PermissionVerdict,
  type RuleSource,
  toolKind,
} from '../../src/tools/permissions.ts';
import type { Tool } from '../../src/tools/types.ts';
import { toolboxFor } from './harness.ts';

const dirs: string[] = [];
afterEach(async () => {
  const { rm } = await import('node:fs/promises');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), 'troupe-perm-')));
  dirs.push(dir);
  return dir;
}

const registry = createToolRegistry();
function tool(name: string, extra: Partial<Tool> = {}): Tool {
  const found = registry.get(name);
  if (found) return { ...found, ...extra };
  return {
    name,
    description: name,
    parameters: { type: 'object' },
    readOnly: false,
    execute: () => ({ ok: true, text: 'ran' }),
    ...extra,
  };
}

function gate(mode: PermissionMode, rules: RuleSource['rules'] = {}, cwd = '/work/project') {
  return buildPermissionGate({
    mode,
    sources: [{ label: 'permissions', rules }],
    context: { cwd, projectRoot: '/work', home: '/home/me' },
  });
}

const check = (
  g: ReturnType<typeof gate>,
  name: string,
  args: Record<string, unknown> = {},
  extra: Partial<Tool> = {},
): Promise<PermissionVerdict> => g.check(tool(name, extra), args, 'agent-1');

describe('permission rules', () => {
  it('matches `:*` command prefixes at a word boundary, and every part of a compound command for allow', async () => {
    const g = gate('default', { allow: ['Bash(npm test:*)', 'Bash(git diff:*)'] });
    expect(await check(g, 'run_terminal_cmd', { command: 'npm test' })).toEqual({
      kind: 'allow',
      rule: 'Bash(npm test:*)',
    });
    expect((await check(g, 'run_terminal_cmd', { command: 'npm test -- --watch' })).kind).toBe('allow');
    expect((await check(g, 'run_terminal_cmd', { command: 'git diff HEAD && npm test' })).kind).toBe('allow');
    // Not a word boundary, and a second command that no rule allows: the mode asks.
    expect((await check(g, 'run_terminal_cmd', { command: 'npm testing' })).kind).toBe('ask');
    expect((await check(g, 'run_terminal_cmd', { command: 'npm test && rm -rf build' })).kind).toBe('ask');
  });

  it('asks when any part of a command matches an ask rule, even behind a wrapper or in a substitution', async () => {
    const g = gate('acceptEdits', { allow: ['Bash'], ask: ['Bash(git push:*)'] });
    for (const command of [
      'git push origin main',
      'git add . && git push',
      'timeout 5 git push',
      'echo $(git push)',
    ]) {
      expect(await check(g, 'run_terminal_cmd', { command })).toMatchObject({
        kind: 'ask',
        rule: 'Bash(git push:*)',
        reason: 'it matches `Bash(git push:*)` in permissions.ask',
      });
    }
    expect((await check(g, 'run_terminal_cmd', { command: 'git status' })).kind).toBe('allow');
  });

  it('denies a command however bash is made to spell it: line continuations, $IFS, ANSI-C quotes, env -S', async () => {
    const g = gate('bypassPermissions', { deny: ['Bash(rm:*)', 'Bash(git push:*)'] });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: `${IFS}` is the shell's, not a JS placeholder.
    const ifs = '${IFS}';
    for (const command of [
      'r\\\nm -rf build',
      `rm${ifs}-rf${ifs}build`,
      'rm$IFS-rf build',
      `git${ifs}push origin main`,
      "$'rm' -rf build",
      "$'\\x72\\155' -rf build",
      "env -S 'rm -rf build'",
      "env --split-string='git push origin'",
      'echo ok && r\\\nm -rf build',
    ]) {
      expect((await check(g, 'run_terminal_cmd', { command })).kind, command).toBe('deny');
    }
    expect((await check(g, 'run_terminal_cmd', { command: "echo 'rm -rf build'" })).kind).toBe('allow');
    expect((await check(g, 'run_terminal_cmd', { command: 'env -S "ls -l"' })).kind).toBe('allow');
  });

  it('a deny or ask command rule catches commands whose command word it cannot read (fails closed)', async () => {
    const g = gate('bypassPermissions', { deny: ['Bash(rm:*)'] });
    for (const command of [
      'a=rm; $a -rf build',
      '"$CMD" -rf build',
      '`which rm` -rf build',
      'eval "rm -rf build"',
      "bash -c 'rm -rf build'",
      "sh -ec 'rm -rf build'",
      'timeout 5 /bin/bash -lc "rm -rf build"',
      'source ./cleanup.sh',
      'echo ok && . ./cleanup.sh',
    ]) {
      expect((await check(g, 'run_terminal_cmd', { command })).kind, command).toBe('deny');
    }
    for (const command of ['echo $HOME', 'FOO=$(date) ls -l', 'bash build.sh', 'ls "$DIR"']) {
      expect((await check(g, 'run_terminal_cmd', { command })).kind, command).toBe('allow');
    }
  });

  it('puts deny before ask and ask before allow, whatever list a rule comes from', async () => {
    const g = buildPermissionGate({
      mode: 'default',
      sources: [
        { label: 'permissions', rules: { allow: ['Bash'], ask: ['Bash(git:*)'] } },
        { label: "the supervisor's permissions", rules: { deny: ['Bash(git push --force:*)'] } },
      ],
      context: { cwd: '/work/project' },
    });
    expect(await check(g, 'run_terminal_cmd', { command: 'git push --force origin' })).toMatchObject({
      kind: 'deny',
      rule: 'Bash(git push --force:*)',
      reason: "it matches `Bash(git push --force:*)` in the supervisor's permissions.deny",
    });
    expect((await check(g, 'run_terminal_cmd', { command: 'git log' })).kind).toBe('ask');
    expect((await check(g, 'run_terminal_cmd', { command: 'ls' })).kind).toBe('allow');
  });

  it('matches gitignore-style path globs, and Edit rules reach every tool that edits', async () => {
    const g = gate('default', {
      allow: ['Edit(src/**/*.ts)'],
      deny: ['Read(./secrets/**)', 'Edit(//etc/**)'],
    });
    expect(await check(g, 'write_file', { path: 'src/a/b.ts', content: '' })).toEqual({
      kind: 'allow',
      rule: 'Edit(src/**/*.ts)',
    });
    expect((await check(g, 'search_replace', { path: 'src/x.ts' })).kind).toBe('allow');
    expect((await check(g, 'search_replace', { path: 'src/x.js' })).kind).toBe('ask');
    expect((await check(g, 'grep', { pattern: 'x', path: 'secrets/keys' })).kind).toBe('deny');
    expect((await check(g, 'read_file', { path: 'secrets/a.env' })).kind).toBe('deny');
    expect((await check(g, 'write_file', { path: '/etc/passwd', content: '' })).kind).toBe('deny');
    expect((await check(g, 'read_file', { path: 'src/a.ts' })).kind).toBe('allow');
  });

  it('denies creating a file through a link into a denied directory', async () => {
    const cwd = await tempDir();
    await mkdir(path.join(cwd, 'secret'));
    await writeFile(path.join(cwd, 'secret', 'a.txt'), 'x');
    await symlink(path.join(cwd, 'secret'), path.join(cwd, 'link'));
    const g = gate(
      'default',
      { allow: ['Edit', 'Read'], deny: ['Edit(./secret/**)', 'Read(./secret/**)'] },
      cwd,
    );
    expect((await check(g, 'write_file', { path: 'link/a.txt', content: '' })).kind).toBe('deny');
    expect((await check(g, 'write_file', { path: 'link/new.txt', content: '' })).kind).toBe('deny');
    expect((await check(g, 'write_file', { path: 'link/sub/new.txt', content: '' })).kind).toBe('deny');
    expect(
      (await check(g, 'search_replace', { path: 'link/new.txt', old_string: '', new_string: 'x' })).kind,
    ).toBe('deny');
    expect((await check(g, 'write_file', { path: 'other/new.txt', content: '' })).kind).toBe('allow');
  });

  it('matches files whose names start with two dots, which are inside the directory', async () => {
    const g = gate('default', { deny: ['Read(./..env)', 'Edit(./**)'] });
    expect((await check(g, 'read_file', { path: '..env' })).kind).toBe('deny');
    expect((await check(g, 'write_file', { path: '..hidden/x', content: '' })).kind).toBe('deny');
    expect((await check(g, 'read_file', { path: 'a.env' })).kind).toBe('allow');
    // Really outside the working directory: not matched by `./**`.
    expect((await check(g, 'write_file', { path: '../x', content: '' })).kind).toBe('ask');
  });

  it('matches MCP rules by server, by wildcard and by exact tool', async () => {
    const g = gate('default', {
      allow: ['mcp__github__get_*', 'mcp__docs'],
      deny: ['mcp__github__delete_repo'],
    });
    expect((await check(g, 'mcp__github__get_issue')).kind).toBe('allow');
    expect((await check(g, 'mcp__docs__search')).kind).toBe('allow');
    expect((await check(g, 'mcp__github__delete_repo')).kind).toBe('deny');
    expect(await check(g, 'mcp__github__create_issue')).toEqual({
      kind: 'ask',
      rule: 'mcp__github__create_issue',
      reason: 'permissionMode default asks before MCP tools',
    });
    expect((await check(g, 'mcp__other__x')).kind).toBe('ask');
  });

  it('matches WebFetch domain rules, subdomains included with `*.`', async () => {
    const g = gate('default', { allow: ['WebFetch(domain:*.example.com)', 'WebFetch(domain:docs.rs)'] });
    expect((await check(g, 'web_fetch', { url: 'https://api.example.com/x' })).kind).toBe('allow');
    expect((await check(g, 'web_fetch', { url: 'https://docs.rs/y' })).kind).toBe('allow');
    expect((await check(g, 'web_fetch', { url: 'https://evil.test/' })).kind).toBe('ask');
  });

  it('treats a deny or ask rule it cannot read as covering the whole tool, and ignores such an allow rule', async () => {
    const g = gate('bypassPermissions', { deny: ['Bash(unclosed'], allow: ['Read(also'] });
    expect((await check(g, 'run_terminal_cmd', { command: 'ls' })).kind).toBe('deny');
    const asking = gate('acceptEdits', { ask: ['Write(oops'], allow: ['Write'] });
    expect((await check(asking, 'write_file', { path: 'a.txt', content: '' })).kind).toBe('ask');
  });
});

describe('permission modes', () => {
  it('default: reads and other tools run; edits, shell, web and MCP ask', async () => {
    const g = gate('default');
    expect((await check(g, 'read_file', { path: 'a' })).kind).toBe('allow');
    expect((await check(g, 'todo_write', { todos: [] })).kind).toBe('allow');
    expect((await check(g, 'my_tool')).kind).toBe('allow');
    for (const [name, words] of [
      ['write_file', 'file edits'],
      ['search_replace', 'file edits'],
      ['run_terminal_cmd', 'shell commands'],
      ['web_fetch', 'web requests'],
      ['web_search', 'web requests'],
      ['mcp__x__y', 'MCP tools'],
    ] as const) {
      expect(await check(g, name, { path: 'a', command: 'ls', url: 'https://a.b/' })).toEqual({
        kind: 'ask',
        rule: name === 'run_terminal_cmd' ? 'run_terminal_cmd(ls:*)' : name,
        reason: `permissionMode default asks before ${words}`,
      });
    }
  });

  it("asks about a shell command under its prefix, never the bare tool (what 'always allow' remembers)", async () => {
    const g = gate('default');
    const rule = async (command: string) => {
      const verdict = await check(g, 'run_terminal_cmd', { command });
      return verdict.kind === 'ask' ? verdict.rule : verdict.kind;
    };
    expect(await rule('echo three')).toBe('run_terminal_cmd(echo:*)');
    expect(await rule('  ls -la src ')).toBe('run_terminal_cmd(ls:*)');
    expect(await rule('git status --short')).toBe('run_terminal_cmd(git status:*)');
    expect(await rule('npm test')).toBe('run_terminal_cmd(npm test:*)');
    expect(await rule('npm run lint -- --fix')).toBe('run_terminal_cmd(npm run lint:*)');
    // Anything that runs what it is handed, or a line of several commands, is asked as written.
    for (const command of [
      'echo a && rm -rf b',
      'echo $(rm -rf b)',
      'echo x > out.txt',
      'bash -c "rm -rf b"',
      'python3 -c "import shutil"',
      'timeout 5 rm -rf b',
      'find . -delete',
      'npx rimraf b',
      'npm exec rimraf b',
      'docker run --rm alpine rm -rf /',
      'git -C .. push',
      'git',
      './build.sh',
      'A=1 make',
      "echo 'unclosed",
    ]) {
      expect(await rule(command)).toBe(`run_terminal_cmd(${command.trim()})`);
    }
    // An ask or needsApproval rule is still the rule as written, or the tool.
    const asking = gate('default', { ask: ['Bash(git push:*)'] });
    expect(await check(asking, 'run_terminal_cmd', { command: 'git push' })).toMatchObject({
      kind: 'ask',
      rule: 'Bash(git push:*)',
    });
    // The prefix rule is a rule like any: written in an allow list, it admits what it names.
    const allowing = gate('default', { allow: ['run_terminal_cmd(npm run lint:*)'] });
    expect((await check(allowing, 'run_terminal_cmd', { command: 'npm run lint -- --fix' })).kind).toBe(
      'allow',
    );
    expect((await check(allowing, 'run_terminal_cmd', { command: 'npm run build' })).kind).toBe('ask');
  });

  it('dontAsk: what would ask is denied; allow rules still run', async () => {
    const g = gate('dontAsk', { allow: ['Bash(ls)'], ask: ['Read(./private/**)'] });
    expect((await check(g, 'run_terminal_cmd', { command: 'ls' })).kind).toBe('allow');
    expect(await check(g, 'run_terminal_cmd', { command: 'rm x' })).toEqual({
      kind: 'deny',
      rule: 'run_terminal_cmd',
      reason: 'permissionMode dontAsk denies shell commands that no allow rule admits',
    });
    expect((await check(g, 'read_file', { path: 'private/a' })).kind).toBe('deny');
    expect((await check(g, 'read_file', { path: 'public/a' })).kind).toBe('allow');
  });

  it('bypassPermissions: everything runs but what a deny rule names', async () => {
    const g = gate('bypassPermissions', { ask: ['Bash'], deny: ['Bash(rm:*)'] });
    expect((await check(g, 'run_terminal_cmd', { command: 'curl x | sh' })).kind).toBe('allow');
    expect((await check(g, 'mcp__a__b')).kind).toBe('allow');
    expect((await check(g, 'deploy', {}, { needsApproval: true })).kind).toBe('allow');
    expect((await check(g, 'run_terminal_cmd', { command: 'rm -rf /' })).kind).toBe('deny');
  });

  it('acceptEdits: edits inside the working directory run; outside it, in protected directories and through links out, they ask', async () => {
    const cwd = await tempDir();
    const outside = await tempDir();
    await mkdir(path.join(cwd, 'src'));
    await symlink(outside, path.join(cwd, 'escape'));
    const g = gate('acceptEdits', {}, cwd);
    expect(await check(g, 'write_file', { path: 'src/new.ts', content: '' })).toEqual({
      kind: 'allow',
      rule: 'acceptEdits',
    });
    expect((await check(g, 'search_replace', { path: path.join(cwd, 'a/b/c.txt') })).kind).toBe('allow');
    expect(await check(g, 'write_file', { path: '../elsewhere.txt', content: '' })).toMatchObject({
      kind: 'ask',
      reason: 'permissionMode acceptEdits asks before edits outside the working directory',
    });
    expect((await check(g, 'write_file', { path: 'escape/x.txt', content: '' })).kind).toBe('ask');
    // A name that starts with two dots is inside: `..notes.txt` is not `../notes.txt`.
    expect((await check(g, 'write_file', { path: '..notes.txt', content: '' })).kind).toBe('allow');
    expect((await check(g, 'run_terminal_cmd', { command: 'touch ..draft' })).kind).toBe('allow');
    expect(await check(g, 'write_file', { path: '.git/config', content: '' })).toMatchObject({
      kind: 'ask',
      reason:
        'permissionMode acceptEdits asks before edits in protected directories (.git, .claude, .troupe)',
    });
    expect((await check(g, 'web_fetch', { url: 'https://a.b/' })).kind).toBe('ask');
    expect((await check(g, 'mcp__a__b')).kind).toBe('ask');
  });

  it('acceptEdits: runs simple filesystem commands on paths inside the working directory, asks for any other command', async () => {
    const cwd = await tempDir();
    const g = gate('acceptEdits', {}, cwd);
    for (const command of [
      'mkdir -p build/out',
      'touch a.txt && cp a.txt b.txt',
      "mv 'old name' new",
      'rm -rf build',
    ]) {
      expect((await check(g, 'run_terminal_cmd', { command })).kind, command).toBe('allow');
    }
    for (const command of [
      'npm test',
      'rm -rf /',
      'cp a.txt ../out.txt',
      'rm -rf .',
      'mkdir $(whoami)',
      'touch a > b',
      'FOO=1 touch a',
      'cp ~/.ssh/id_rsa .',
      'touch .git/hooks/pre-commit',
    ]) {
      expect((await check(g, 'run_terminal_cmd', { command })).kind, command).toBe('ask');
    }
  });

  it("plan: read-only tools only (admission), with the default mode's asks for the read-only web tools", async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, { permissionMode: 'plan' });
    expect(toolbox.admitted.has('write_file')).toBe(false);
    expect(toolbox.admitted.has('run_terminal_cmd')).toBe(false);
    expect((await toolbox.permissions.check(tool('web_fetch'), { url: 'https://a.b/' }, 'a')).kind).toBe(
      'ask',
    );
  });

  it("a supervisor's mode replaces a definition's `default` only", () => {
    expect(effectiveMode('default', 'acceptEdits')).toBe('acceptEdits');
    expect(effectiveMode('plan', 'bypassPermissions')).toBe('plan');
    expect(effectiveMode('dontAsk')).toBe('dontAsk');
  });

  it('classifies tools for the modes', () => {
    expect(['write_file', 'run_terminal_cmd', 'web_search', 'mcp__a__b', 'grep'].map(toolKind)).toEqual([
      'edit',
      'shell',
      'web',
      'mcp',
      'other',
    ]);
  });
});

describe("a tool's own needsApproval", () => {
  it('asks when it is true or its function says so; a function that throws asks too', async () => {
    const g = gate('default', { allow: ['deploy'] });
    const needs = vi.fn((args: Record<string, unknown>) => args.target === 'prod');
    expect((await check(g, 'deploy', { target: 'staging' }, { needsApproval: needs })).kind).toBe('allow');
    expect(await check(g, 'deploy', { target: 'prod' }, { needsApproval: needs })).toEqual({
      kind: 'ask',
      rule: 'deploy',
      reason: '`deploy` asks for approval before it runs (needsApproval)',
    });
    expect(needs).toHaveBeenCalledWith({ target: 'prod' }, { agentId: 'agent-1', cwd: '/work/project' });
    const broken = () => {
      throw new Error('bug');
    };
    expect((await check(g, 'deploy', {}, { needsApproval: broken })).kind).toBe('ask');
    expect((await check(g, 'deploy', {}, { needsApproval: true })).kind).toBe('ask');
  });
});

describe('the toolbox with permissions', () => {
  it('asks its approve hook with the arguments as the model gave them, and runs the tool only when approved', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, {
      paramNameOverrides: { write_file: { path: 'file' } },
    });
    const asks: unknown[] = [];
    const denied = await toolbox.call(
      'write_file',
      { file: 'a.txt', content: 'x' },
      {
        approve: async (ask) => {
          asks.push(ask);
          return { approved: false, by: 'person', reason: 'not today' };
        },
      },
    );
    expect(asks).toEqual([
      {
        tool: 'write_file',
        modelName: 'write_file',
        modelArgs: { file: 'a.txt', content: 'x' },
        args: { path: 'a.txt', content: 'x' },
        rule: 'write_file',
        reason: 'permissionMode default asks before file edits',
      },
    ]);
    expect(denied).toMatchObject({
      ok: false,
      attempts: 0,
      text: '`write_file` was denied by a person: not today. It did not run. Do not retry it as is.',
      denied: { rule: 'write_file', reason: 'not today', asked: true },
    });
    await expect(readFile(path.join(cwd, 'a.txt'), 'utf8')).rejects.toThrow();
    const ran = await toolbox.call(
      'write_file',
      { file: 'a.txt', content: 'x' },
      { approve: async () => ({ approved: true, by: 'person' }) },
    );
    expect(ran).toMatchObject({ ok: true, attempts: 1 });
    expect(await readFile(path.join(cwd, 'a.txt'), 'utf8')).toBe('x');
  });

  it('denies by a deny rule without asking, and lets the caller decide when it passes no hook', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, { permissions: { allow: [], ask: [], deny: ['Write(*.lock)'] } });
    const approve = vi.fn();
    const refused = await toolbox.call('write_file', { path: 'x.lock', content: '' }, { approve });
    expect(approve).not.toHaveBeenCalled();
    expect(refused.denied).toEqual({
      rule: 'Write(*.lock)',
      reason: 'it matches `Write(*.lock)` in permissions.deny',
      asked: false,
    });
    expect((await toolbox.call('write_file', { path: 'ok.txt', content: 'y' })).ok).toBe(true);
    await writeFile(path.join(cwd, 'keep.txt'), 'k');
  });
});
