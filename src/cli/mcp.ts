/**
 * `troupe mcp list`: the MCP servers agents would get from here (`.mcp.json` at the project root,
 * and an agent's own with `--agent`), started once to show their status and tools.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { discoverAgents, pickAgent } from '../definition/discovery.ts';
import type { McpServerConfig } from '../mcp/config.ts';
import { McpPool } from '../mcp/pool.ts';
import { mcpToolName, mcpTools } from '../mcp/tools.ts';
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
  /** `unknown` for a server an agent names that nothing here configures. */
  readonly type: McpServerConfig['type'] | 'unknown';
  /** Where it is declared: `.mcp.json`, `agent <name>`, or `nowhere` (status `missing`). */
  readonly source: string;
  /** `missing`: `--agent`'s definition names it, and neither it nor `.mcp.json` configures it. */
  readonly status: 'ready' | 'failed' | 'missing';
  /** The tools the server lists, by its own names. */
  readonly tools: readonly string[];
  readonly error?: string;
  /**
   * What an agent would not get as listed: tools beyond the per-server bound or shadowed by
   * another's name, or (with `--agent`) a `.mcp.json` server the agent replaces with its own.
   */
  readonly notices?: readonly string[];
}

/** Registers `troupe mcp` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const mcp = program.command('mcp').description(COMMAND_HELP.mcp.description);
  mcp
    .command('list')
    .description(
      "Start every MCP server of this project (.mcp.json, and the agent's own with --agent), list " +
        'their tools and stop them. Exits 1 when a server cannot be reached.',
    )
    .option('--json', 'print a JSON array')
    .option('--cwd <dir>', 'project directory (default: the current directory)', existingDirectory)
    .option('--agent <name>', "also the servers of this agent's definition")
    .action(async (flags: ListFlags) => {
      const entries = await listServers(resolve(flags.cwd ?? process.cwd()), flags.agent);
      if (entries.some((entry) => entry.status !== 'ready')) setExit(1);
      io.stdout(flags.json ? `${JSON.stringify(entries, null, 2)}\n` : listText(entries));
    });
}

/** Starts each server once (bounded by the connect timeout), lists its tools, stops it. */
export async function listServers(cwd: string, agent?: string): Promise<McpListEntry[]> {
  const project = await runMcpServers({ cwd, mcpServers: {}, mcpProjectFile: true });
  const servers: [string, McpServerConfig, string][] = Object.entries(project).map(([name, config]) => [
    name,
    config,
    '.mcp.json',
  ]);
  /** Project servers an agent replaces with its own of the same name, and names it leaves unconfigured. */
  const replaced = new Map<string, string>();
  const missing: McpListEntry[] = [];
  if (agent !== undefined) {
    const { definition } = pickAgent(await discoverAgents({ cwd }), agent);
    for (const ref of definition.mcpServers) {
      if (typeof ref !== 'string') {
        servers.push([ref.name, ref.config, `agent ${definition.name}`]);
        if (ref.name in project) replaced.set(ref.name, definition.name);
      } else if (!(ref in project)) {
        missing.push({
          name: ref,
          type: 'unknown',
          source: 'nowhere',
          status: 'missing',
          tools: [],
          error: `agent ${definition.name} names it, and neither its definition nor .mcp.json configures it`,
        });
      }
    }
  }
  // One attempt per server: a listing should say what is wrong, not retry it.
  const pool = new McpPool({ cwd, maxRestarts: 1 });
  try {
    const listed = await Promise.all(
      servers.map(async ([name, config, source]): Promise<McpListEntry> => {
        const owner = source === '.mcp.json' ? replaced.get(name) : undefined;
        const notices =
          owner === undefined ? [] : [`agent ${owner} declares its own \`${name}\`, which it uses instead`];
        try {
          const connection = pool.connection(name, config);
          const tools = await connection.tools();
          notices.push(...mcpTools(connection, tools).notices);
          return {
            name,
            type: config.type,
            source,
            status: 'ready',
            tools: tools.map((tool) => tool.name),
            ...(notices.length > 0 ? { notices } : {}),
          };
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          return {
            name,
            type: config.type,
            source,
            status: 'failed',
            tools: [],
            error: message,
            ...(notices.length > 0 ? { notices } : {}),
          };
        }
      }),
    );
    return [...listed, ...missing];
  } finally {
    await pool.close();
  }
}

function listText(entries: readonly McpListEntry[]): string {
  if (entries.length === 0)
    return "No MCP servers configured (.mcp.json at the project root, or an agent's mcpServers).\n";
  const lines: string[] = [];
  for (const entry of entries) {
    lines.push(`${entry.name}  ${entry.type}  ${entry.status}  (${entry.source})`);
    if (entry.status === 'ready') {
      const names = [...new Set(entry.tools.map((tool) => mcpToolName(entry.name, tool)))];
      lines.push(`  ${names.length} tool(s): ${names.join(', ')}`);
    } else {
      lines.push(`  ${entry.error ?? 'unknown error'}`);
    }
    for (const notice of entry.notices ?? []) lines.push(`  note: ${notice}`);
  }
  return `${lines.join('\n')}\n`;
}
