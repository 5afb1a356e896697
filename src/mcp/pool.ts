/**
 * The MCP connections of one thread (or one process): agents that use the same server with the
 * same settings share one connection, opened on first use and kept until the pool closes.
 *
 * Where connections live: each actor-host thread has its own pool, because tools run in the
 * agent's thread (a stdio server is a child of the process, spoken to from that thread). N threads
 * using one server hold N connections; agents on one thread share one. In-process runs (`troupe
 * run`, `runAgent` without a pool) get a pool of their own, closed when the run ends.
 */
import type { Tool } from '../tools/types.ts';
import type { McpServerConfig, McpServerRef, McpServers } from './config.ts';
import { McpConnection, type McpConnectionOptions, type McpServerStatus } from './connection.ts';
import { mcpTools } from './tools.ts';

/** A server that gave an agent no tools, and why. */
export interface McpServerProblem {
  readonly server: string;
  readonly message: string;
}

/** What an agent gets from its MCP servers. */
export interface McpToolSet {
  readonly tools: readonly Tool[];
  /** Servers that could not be reached: the agent runs without their tools. */
  readonly problems: readonly McpServerProblem[];
  /** Tools of reached servers the agent does not get (beyond the per-server bound, or shadowed). */
  readonly notices: readonly McpServerProblem[];
}

/** Anything that turns server settings into tools (a pool, or a wrapper around one). */
export interface McpToolSource {
  toolsFor(servers: McpServers, signal?: AbortSignal): Promise<McpToolSet>;
}

/** A server's state, for `troupe mcp list` and diagnostics. */
export interface McpServerState {
  readonly name: string;
  readonly type: McpServerConfig['type'];
  readonly status: McpServerStatus;
  readonly tools: readonly string[];
  readonly failures: number;
  readonly lastError: string | undefined;
}

/** Connections by server name and settings. */
export class McpPool implements McpToolSource {
  readonly #options: McpConnectionOptions;
  readonly #connections = new Map<string, McpConnection>();
  #closed = false;

  constructor(options: McpConnectionOptions) {
    this.#options = options;
  }

  /** The connection for a server (created, not started, on first request). */
  connection(name: string, config: McpServerConfig): McpConnection {
    const key = JSON.stringify([name, config]);
    let connection = this.#connections.get(key);
    if (!connection) {
      connection = new McpConnection(name, config, this.#options);
      this.#connections.set(key, connection);
    }
    return connection;
  }

  /** The tools of `servers`, starting them as needed; unreachable servers are reported, not thrown. */
  async toolsFor(servers: McpServers, signal?: AbortSignal): Promise<McpToolSet> {
    if (this.#closed) return { tools: [], problems: [], notices: [] };
    const results = await Promise.all(
      Object.entries(servers).map(async ([name, config]) => {
        const connection = this.connection(name, config);
        try {
          const { tools, notices } = mcpTools(connection, await connection.tools(signal));
          return {
            tools,
            problem: undefined,
            notices: notices.map((message) => ({ server: name, message })),
          };
        } catch (error) {
          if (signal?.aborted) throw error;
          const message = error instanceof Error ? error.message : String(error);
          return { tools: [], problem: { server: name, message }, notices: [] };
        }
      }),
    );
    // Tool names are unique per server; across servers `mcp__a__b__c` can be server `a`'s `b__c`
    // and server `a__b`'s `c`. The first server in `servers` keeps the name: two tools of one name
    // made the agent's start fail (`duplicate_tool`).
    const owners = new Map<string, string>();
    const tools: Tool[] = [];
    const notices = results.flatMap((result) => result.notices);
    results.forEach((result, index) => {
      const server = Object.keys(servers)[index] ?? '';
      const taken: string[] = [];
      for (const tool of result.tools) {
        const owner = owners.get(tool.name);
        if (owner === undefined) {
          owners.set(tool.name, server);
          tools.push(tool);
        } else {
          taken.push(`\`${tool.name}\` (server \`${owner}\`'s)`);
        }
      }
      if (taken.length > 0) {
        notices.push({
          server,
          message:
            `MCP server \`${server}\`: ${taken.length} tool(s) not offered, their names being those of another ` +
            `server's tools: ${taken.join(', ')}`,
        });
      }
    });
    return {
      tools,
      problems: results.flatMap((result) => (result.problem ? [result.problem] : [])),
      notices,
    };
  }

  /** Every connection's state. */
  async states(): Promise<McpServerState[]> {
    return Promise.all(
      [...this.#connections.values()].map(async (connection) => ({
        name: connection.name,
        type: connection.config.type,
        status: connection.status,
        tools: connection.status === 'ready' ? (await connection.tools()).map((tool) => tool.name) : [],
        failures: connection.failures,
        lastError: connection.lastError,
      })),
    );
  }

  /** Closes every connection (stdio servers are stopped). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const connections = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(connections.map((connection) => connection.close()));
  }
}

/** The part of a definition that says which servers an agent may use. */
export interface McpDefinitionPart {
  readonly tools: readonly string[] | undefined;
  readonly disallowedTools: readonly string[];
  readonly mcpServers: readonly McpServerRef[];
}

/**
 * The servers an agent connects to: the run's servers (`.mcp.json`, supervisor, plan) and the
 * definition's own, a definition's settings winning for its name; only those whose tools the
 * agent could be admitted to (`tools` omitted, or an entry naming `mcp__<server>...`), and none
 * that `disallowedTools` removes as a whole (`mcp__<server>`, `mcp__<server>__*`).
 */
export function serversForAgent(definition: McpDefinitionPart, configured: McpServers): McpServers {
  const all: Record<string, McpServerConfig> = { ...configured };
  for (const ref of definition.mcpServers) {
    if (typeof ref !== 'string') all[ref.name] = ref.config;
  }
  const lower = (text: string) => text.toLowerCase().trim();
  // Pushed, not map()ped: an optimized map() returns a holey array where the interpreter's is
  // packed, and this code (run for every agent a host starts) deopted on it.
  const names: string[] = [];
  for (const tool of definition.tools ?? []) names.push(lower(tool));
  const everything = definition.tools === undefined || names.includes('*') || names.includes('mcp__*');
  const denied = new Set<string>();
  for (const rule of definition.disallowedTools) {
    const entry = lower(rule);
    const server = /^mcp__(.+?)(?:__\*)?$/.exec(entry)?.[1];
    if (server !== undefined && !server.includes('__') && !server.includes('(')) denied.add(server);
  }
  const chosen: Record<string, McpServerConfig> = {};
  for (const [name, config] of Object.entries(all)) {
    const server = name.toLowerCase();
    if (denied.has(server)) continue;
    if (
      everything ||
      names.some((entry) => entry === `mcp__${server}` || entry.startsWith(`mcp__${server}__`))
    ) {
      chosen[name] = config;
    }
  }
  return chosen;
}
