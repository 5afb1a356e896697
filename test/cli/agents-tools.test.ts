import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import type { McpStdioServer } from '../../src/mcp/config.ts';
import { definitionText, TempTree } from '../definition/helpers.ts';
import { stdioEverything } from '../mcp/helpers.ts';

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
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
  process.env.HOME = tree.mkdir('home');
  tree.mkdir('project/.git');
  project = tree.path('project');
});

afterEach(() => {
  process.env.HOME = savedHome;
  tree.remove();
});

describe('troupe agents validate: tool names', () => {
  it('warns about every tool name that matches no tool, at its line and column, and keeps exit 0', async () => {
    const file = tree.write(
      'project/agents/reviewer.md',
      definitionText('reviewer', 'tools: read, Grep, NotebookEdit, search, github/*\n'),
    );
    const result = await run('agents', 'validate', file);
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n').filter((line) => line.includes('unknown_tool'));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /reviewer\.md:4:20: warning unknown_tool: `NotebookEdit` in `tools` is a Claude Code tool troupe does not offer/,
    );
    expect(lines[1]).toMatch(
      /reviewer\.md:4:34: warning unknown_tool: `search` in `tools` is a VS Code \(GitHub Copilot\) tool troupe does not offer; write `Grep`, `Glob` instead/,
    );
    expect(lines[2]).toMatch(/reviewer\.md:4:42: .*`server\/tool` is VS Code's syntax; .*`mcp__github__\*`/);
  });

  it('makes an override of an unknown tool an error', async () => {
    const file = tree.write(
      'project/agents/odd.md',
      definitionText('odd', 'toolNameOverrides:\n  read_fil: Read\n'),
    );
    const result = await run('agents', 'validate', file);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/odd\.md:5:3: error unknown_tool_override: .*`read_fil`/);
  });

  it('accepts the tools of servers in .mcp.json without starting them, and warns about other servers', async () => {
    tree.write('project/.mcp.json', JSON.stringify({ mcpServers: { docs: { command: 'no-such-program' } } }));
    const file = tree.write(
      'project/agents/web.md',
      definitionText('web', 'tools: [mcp__docs__search, mcp__jira__*]\nmcpServers: [docs, slack]\n'),
    );
    const result = await runIn(project, 'agents', 'validate', file);
    const problems = result.stdout.split('\n').filter((line) => / (warning|error) /.test(line));
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /web\.md:4:\d+: warning unknown_tool: `mcp__jira__\*` .*MCP server `jira`, which is not configured/,
    );
    expect(problems[1]).toMatch(/web\.md:5:\d+: warning unknown_mcp_server: .*`slack`/);
  });
});

describe('troupe agents show: models', () => {
  it('prints the model id the alias resolves to for the provider, and honours --model-map', async () => {
    tree.write('project/.troupe/agents/fast.md', definitionText('fast', 'model: haiku\n'));
    const anthropic = await run('agents', 'show', 'fast', '--cwd', project, '--provider', 'anthropic');
    expect(anthropic.stdout).toContain('# model: haiku -> claude-haiku-4-5 (provider anthropic)');
    const openai = await run('agents', 'show', 'fast', '--cwd', project, '--provider', 'openai', '--json');
    expect(JSON.parse(openai.stdout).resolvedModel).toEqual({ provider: 'openai', id: 'gpt-5-mini' });
    const mapped = await run(
      'agents',
      'show',
      'fast',
      '--cwd',
      project,
      '--provider',
      'openai',
      '--model-map',
      'haiku=qwen3:8b',
    );
    expect(mapped.stdout).toContain('# model: haiku -> qwen3:8b (provider openai)');
  });

  it('prints tool-name warnings to stderr', async () => {
    tree.write('project/.troupe/agents/lost.md', definitionText('lost', 'tools: [Read, Reed]\n'));
    const result = await run('agents', 'show', 'lost', '--cwd', project);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^\.troupe\/agents\/lost\.md:4:15: warning unknown_tool: `Reed`/);
  });
});

describe('troupe mcp list', () => {
  it('says when no server is configured, and its help reads as prose', async () => {
    const none = await run('mcp', 'list', '--cwd', project);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe(
      "No MCP servers configured (.mcp.json at the project root, or an agent's mcpServers).\n",
    );
    const help = await run('mcp', 'list', '--help');
    expect(help.stdout).toContain("the agent's own");
  });

  it('starts the servers of .mcp.json, lists their tools and stops them', async () => {
    const pidFile = join(project, 'pids');
    tree.write(
      'project/.mcp.json',
      JSON.stringify({
        mcpServers: { everything: stdioEverything(pidFile), broken: { command: join(project, 'none') } },
      }),
    );
    const result = await run('mcp', 'list', '--cwd', project, '--json');
    expect(result.code).toBe(1);
    const entries = JSON.parse(result.stdout) as {
      name: string;
      status: string;
      tools: string[];
      error?: string;
    }[];
    expect(entries.find((entry) => entry.name === 'everything')).toMatchObject({ status: 'ready' });
    expect(entries.find((entry) => entry.name === 'everything')?.tools).toContain('get-sum');
    expect(entries.find((entry) => entry.name === 'broken')?.error).toMatch(/could not be started/);
    const text = await run('mcp', 'list', '--cwd', project);
    expect(text.stdout).toContain('mcp__everything__echo');
  });

  it('--agent: says which project server the agent replaces with its own, and names one nothing configures', async () => {
    const pidFile = join(project, 'pids');
    const everything = stdioEverything(pidFile) as McpStdioServer;
    tree.write('project/.mcp.json', JSON.stringify({ mcpServers: { everything } }));
    const own = { everything: { command: everything.command, args: everything.args, env: everything.env } };
    tree.write(
      'project/.troupe/agents/own.md',
      definitionText('own', `mcpServers:\n  - ${JSON.stringify(own)}\n  - nosuch\n`),
    );
    const result = await run('mcp', 'list', '--cwd', project, '--agent', 'own', '--json');
    expect(result.code).toBe(1);
    const entries = JSON.parse(result.stdout) as {
      name: string;
      source: string;
      status: string;
      notices?: string[];
    }[];
    expect(entries.map((entry) => [entry.name, entry.source, entry.status])).toEqual([
      ['everything', '.mcp.json', 'ready'],
      ['everything', 'agent own', 'ready'],
      ['nosuch', 'nowhere', 'missing'],
    ]);
    expect(entries[0]?.notices).toEqual(['agent own declares its own `everything`, which it uses instead']);
    const text = await run('mcp', 'list', '--cwd', project, '--agent', 'own');
    expect(text.stdout).toContain('  note: agent own declares its own `everything`, which it uses instead');
    expect(text.stdout).toMatch(/nosuch {2}unknown {2}missing {2}\(nowhere\)\n {2}agent own names it/);
  });
});

async function runIn(dir: string, ...argv: string[]) {
  const saved = process.cwd();
  process.chdir(dir);
  try {
    return await run(...argv);
  } finally {
    process.chdir(saved);
  }
}
