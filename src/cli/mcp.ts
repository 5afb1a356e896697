/**
 * `troupe mcp list`: the MCP servers agents would get from here (`.mcp.json` at the project root,
 * and an agent's own with `--agent`), started once to show their status and tools.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { discoverAgents, pickAgent } from '../definition/discovery.ts';
import type { McpServerConfig } from '../mcp/config.ts';
import { McpPool } from '../mcp/pool.ts';
import { mcpToolName } from '../mcp/tools.ts';
import { runMcpServers } from '../supervisor/definitions.ts';
import { COMMAND_HELP } from './commands.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import type { CliIO } from './shared/io.ts';

interface ListFlags {
  readonly json?: boolean;
  readonly cwd?: string;
  readonly agent?: string;
}

/** One server as `mcp list` reports it. */
export interface McpListEntry {
  readonly name: string;
  readonly type: McpServerConfig['type'];
  /** Where it is declared: `.mcp.json`, or `agent <name>`. */
  readonly source: string;
  readonly status: 'ready' | 'failed';
  readonly tools: readonly string[];
  readonly error?: string;
}

/** Registers `troupe mcp` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const mcp = program.command('mcp').description(COMMAND_HELP.mcp.description);
  mcp
    .command('list')
    .description(
      'Start every MCP server of this project (.mcp.json, and the agent`s own with --agent), list ' +
        'their tools and stop them. Exits 1 when a server cannot be reached.',
    )
    .option('--json', 'print a JSON array')
    .option('--cwd <dir>', 'project directory (default: the current directory)', existingDirectory)
    .option('--agent <name>', "also the servers of this agent's definition")
    .action(async (flags: ListFlags) => {
      const entries = await listServers(resolve(flags.cwd ?? process.cwd()), flags.agent);
      if (entries.some((entry) => entry.status === 'failed')) setExit(1);
      io.stdout(flags.json ? `${JSON.stringify(entries, null, 2)}\n` : listText(entries));
    });
}

/** Starts each server once (bounded by the connect timeout), lists its tools, stops it. */
export async function listServers(cwd: string, agent?: string): Promise<McpListEntry[]> {
  const servers: [string, McpServerConfig, string][] = Object.entries(
    await runMcpServers({ cwd, mcpServers: {}, mcpProjectFile: true }),
  ).map(([name, config]) => [name, config, '.mcp.json']);
  if (agent !== undefined) {
    const { definition } = pickAgent(await discoverAgents({ cwd }), agent);
    for (const ref of definition.mcpServers) {
      if (typeof ref !== 'string') servers.push([ref.name, ref.config, `agent ${definition.name}`]);
    }
  }
  // One attempt per server: a listing should say what is wrong, not retry it.
  const pool = new McpPool({ cwd, maxRestarts: 1 });
  try {
    return await Promise.all(
      servers.map(async ([name, config, source]): Promise<McpListEntry> => {
        try {
          const tools = await pool.connection(name, config).tools();
          return { name, type: config.type, source, status: 'ready', tools: tools.map((tool) => tool.name) };
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          return { name, type: config.type, source, status: 'failed', tools: [], error: message };
        }
      }),
    );
  } finally {
    await pool.close();
  }
}

function listText(entries: readonly McpListEntry[]): string {
  if (entries.length === 0)
    return 'No MCP servers configured (.mcp.json at the project root, or an agent`s mcpServers).\n';
  const lines: string[] = [];
  for (const entry of entries) {
    lines.push(`${entry.name}  ${entry.type}  ${entry.status}  (${entry.source})`);
    if (entry.status === 'ready') {
      lines.push(
        `  ${entry.tools.length} tool(s): ${entry.tools.map((tool) => mcpToolName(entry.name, tool)).join(', ')}`,
      );
    } else {
      lines.push(`  ${entry.error ?? 'unknown error'}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
