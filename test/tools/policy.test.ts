import { existsSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Tool, ToolContext } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();
const names = (toolbox: { specs: readonly { name: string }[] }) => toolbox.specs.map((spec) => spec.name);

function stub(name: string, readOnly = true) {
  const execute = vi.fn((_args: Record<string, unknown>, _ctx: ToolContext) => ({
    ok: true,
    text: `${name} ran`,
  }));
  const tool: Tool = {
    name,
    description: name,
    parameters: { type: 'object', properties: { agent: { type: 'string' } }, additionalProperties: true },
    readOnly,
    execute,
  };
  return { tool, execute };
}

describe('rules in tools', () => {
  it('admits `git diff` through Bash(git diff:*) and refuses rm, telling the model why', async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, 'keep.txt'), 'x');
    const toolbox = toolboxFor(cwd, { tools: ['Read', 'Bash(git diff:*)'] });
    expect(names(toolbox)).toEqual(['read_file', 'run_terminal_cmd']);

    const diff = await toolbox.call('run_terminal_cmd', { command: 'git diff --no-index keep.txt keep.txt' });
    expect(diff).toMatchObject({ attempts: 1 });
    expect(diff.text).toContain('[exit code 0]');

    const rm = await toolbox.call('run_terminal_cmd', { command: 'rm -f keep.txt' });
    expect(rm).toMatchObject({ ok: false, attempts: 0 });
    expect(rm.text).toBe(
      '`run_terminal_cmd` refused this call: this agent may only run commands matching `Bash(git diff:*)`, ' +
        'and it matches no allowed pattern. Do not retry it as is.',
    );
    const chained = await toolbox.call('run_terminal_cmd', { command: 'git diff && rm -f keep.txt' });
    expect(chained.text).toContain('its part `rm -f keep.txt` matches no allowed pattern');
    expect(existsSync(path.join(cwd, 'keep.txt'))).toBe(true);
  });

  it('keeps a tool unrestricted when it is also listed bare', async () => {
    const toolbox = toolboxFor(await tempDir(), { tools: ['Bash(git diff:*)', 'bash'] });
    expect((await toolbox.call('run_terminal_cmd', { command: 'echo hi' })).text).toContain('hi');
  });

  it('admits read_file only below the directory of Read(./docs/**)', async () => {
    const cwd = await tempDir();
    await mkdir(path.join(cwd, 'docs'));
    await writeFile(path.join(cwd, 'docs', 'a.md'), 'doc');
    await writeFile(path.join(cwd, 'secret.txt'), 'secret');
    const toolbox = toolboxFor(cwd, { tools: ['Read(./docs/**)'] });
    expect((await toolbox.call('read_file', { path: 'docs/a.md' })).ok).toBe(true);
    const refused = await toolbox.call('read_file', { path: 'secret.txt' });
    expect(refused.ok).toBe(false);
    expect(refused.text).toContain('this agent may only make calls matching `Read(./docs/**)`');
  });
});

describe('disallowedTools never fails open', () => {
  it('denies a tool by its model-facing name and by any case of its names (the renamed-tool case)', async () => {
    const cwd = await tempDir();
    for (const entry of ['shell', 'SHELL', 'RUN_TERMINAL_CMD', 'Bash', 'bash(*)']) {
      const toolbox = toolboxFor(cwd, {
        toolNameOverrides: { run_terminal_cmd: 'shell' },
        disallowedTools: [entry],
      });
      expect(names(toolbox), entry).not.toContain('shell');
      const call = await toolbox.call('shell', { command: 'touch ran.txt' });
      expect(call.ok).toBe(false);
      expect(existsSync(path.join(cwd, 'ran.txt'))).toBe(false);
    }
  });

  it('removes the whole tool for an entry it cannot read or a specifier the tool cannot take', async () => {
    const cwd = await tempDir();
    expect(names(toolboxFor(cwd, { disallowedTools: ['Bash(rm -rf'] }))).not.toContain('run_terminal_cmd');
    expect(names(toolboxFor(cwd, { disallowedTools: ['TodoWrite(x)'] }))).not.toContain('todo_write');
  });

  it('refuses denied commands wherever they appear, and keeps the rest of the tool', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, { disallowedTools: ['Bash(rm:*)'] });
    expect(names(toolbox)).toContain('run_terminal_cmd');
    for (const command of ['rm -f x', 'echo a && rm -f x', 'timeout 5 rm x', 'echo $(rm x)']) {
      const call = await toolbox.call('run_terminal_cmd', { command });
      expect(call.text, command).toContain('it matches `Bash(rm:*)` in disallowedTools');
    }
    expect((await toolbox.call('run_terminal_cmd', { command: 'echo fine' })).text).toContain('fine');
  });

  it('keeps denied files out of reads, directory listings, grep and glob, symlinks included', async () => {
    const cwd = await tempDir();
    await mkdir(path.join(cwd, 'secrets'));
    await writeFile(path.join(cwd, 'secrets', 'key.txt'), 'TOKEN=hunter2');
    await writeFile(path.join(cwd, 'open.txt'), 'TOKEN=public');
    await symlink(path.join(cwd, 'secrets', 'key.txt'), path.join(cwd, 'link.txt'));
    const toolbox = toolboxFor(cwd, { disallowedTools: ['Read(./secrets/**)'] });

    expect((await toolbox.call('read_file', { path: 'secrets/key.txt' })).ok).toBe(false);
    expect((await toolbox.call('read_file', { path: 'link.txt' })).ok).toBe(false);
    const grep = await toolbox.call('grep', { pattern: 'TOKEN' });
    expect(grep.text).toContain('open.txt');
    expect(grep.text).not.toContain('hunter2');
    const glob = await toolbox.call('glob', { pattern: '**/*.txt' });
    expect(glob.text).not.toContain('key.txt');
    expect((await toolbox.call('list_dir', {})).text).not.toContain('secrets');
    expect((await toolbox.call('grep', { pattern: 'TOKEN', path: 'secrets' })).ok).toBe(false);
  });
});

describe('orchestration and MCP names', () => {
  it('admits spawn_agent and await_agents for Task, only when named, restricted by Task(name)', async () => {
    const cwd = await tempDir();
    const spawn = stub('spawn_agent', false);
    const extra = [spawn.tool, stub('await_agents').tool, stub('send_instruction', false).tool];
    expect(names(toolboxFor(cwd, {}, extra))).not.toContain('spawn_agent');
    expect(names(toolboxFor(cwd, { tools: ['Task'] }, extra))).toEqual(['spawn_agent', 'await_agents']);
    expect(names(toolboxFor(cwd, { tools: ['Agent', 'SendMessage'] }, extra))).toEqual([
      'spawn_agent',
      'await_agents',
      'send_instruction',
    ]);
    const restricted = toolboxFor(cwd, { tools: ['Task(reviewer)'] }, extra);
    expect((await restricted.call('spawn_agent', { agent: 'reviewer' })).ok).toBe(true);
    expect((await restricted.call('spawn_agent', { agent: 'deployer' })).ok).toBe(false);
    expect(spawn.execute).toHaveBeenCalledOnce();
  });

  it('filters MCP tools by server and wildcard', async () => {
    const cwd = await tempDir();
    const extra = ['mcp__docs__search', 'mcp__docs__fetch', 'mcp__ops__deploy'].map(
      (name) => stub(name).tool,
    );
    expect(names(toolboxFor(cwd, { tools: ['mcp__docs__*'] }, extra))).toEqual([
      'mcp__docs__search',
      'mcp__docs__fetch',
    ]);
    expect(names(toolboxFor(cwd, { tools: ['mcp__ops'] }, extra))).toEqual(['mcp__ops__deploy']);
    const denied = toolboxFor(cwd, { disallowedTools: ['mcp__docs__fetch', 'MCP__OPS__*'] }, extra);
    expect(names(denied).filter((name) => name.startsWith('mcp__'))).toEqual(['mcp__docs__search']);
  });
});

describe('a policy asked at every call', () => {
  it('answers each tool object by its own name and readOnly, the same way every time', async () => {
    const { buildToolPolicy } = await import('../../src/tools/policy.ts');
    const cwd = await tempDir();
    const policy = buildToolPolicy(
      { tools: ['read_file', 'run_terminal_cmd(git diff:*)'], disallowedTools: [], permissionMode: 'plan' },
      { cwd },
    );
    const reader = stub('read_file', true).tool;
    const writer = stub('read_file', false).tool; // Same name, not read-only: a different answer.
    const shell = stub('run_terminal_cmd', true).tool;
    for (let round = 0; round < 3; round += 1) {
      expect(policy.refusal(reader)).toBeUndefined();
      expect(policy.refusal(writer)).toBe('permissionMode plan admits read-only tools only');
      expect(policy.refusal(stub('list_dir').tool)).toBe('it is not in the allowed tools');
      expect(await policy.callRefusal(reader, { path: 'a' })).toBeUndefined();
      expect(await policy.callRefusal(shell, { command: 'git diff' })).toBeUndefined();
      expect(await policy.callRefusal(shell, { command: 'rm -rf /' })).toContain(
        'this agent may only run commands matching `run_terminal_cmd(git diff:*)`',
      );
    }
  });
});
