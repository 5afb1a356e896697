/** The definitions a supervisor spawns by name: explicit ones first, then discovery from its cwd. */
import { discoverAgents } from '../definition/discovery.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import {
  loadProjectMcpFile,
  type McpServerConfig,
  type McpServers,
  registerMcpCredentials,
} from '../mcp/config.ts';
import { memberPath } from '../member-path.ts';
import { projectDirs } from '../prompt/project-dirs.ts';
import type { PreparedSupervisorOptions } from './options.ts';

/** Definitions by name. Explicit `definitions` shadow discovered ones of the same name. */
export async function loadDefinitions(
  options: PreparedSupervisorOptions,
): Promise<Map<string, AgentDefinition>> {
  const found = await discoverAgents({ cwd: options.cwd, compat: options.compat });
  const byName = new Map<string, AgentDefinition>();
  for (const agent of found.agents) byName.set(agent.definition.name, agent.definition);
  for (const definition of options.definitions) byName.set(definition.name, definition);
  return byName;
}

/**
 * The MCP servers agents of this supervisor may use: `.mcp.json` at the project root (unless
 * `mcpProjectFile: false`), then the `mcpServers` option, which wins for a name in both. A broken
 * `.mcp.json` is a UserError `invalid_mcp_config` before anything runs.
 */
export async function runMcpServers(
  options: Pick<PreparedSupervisorOptions, 'cwd' | 'mcpServers' | 'mcpProjectFile'>,
): Promise<McpServers> {
  if (!options.mcpProjectFile) {
    registerMcpCredentials(options.mcpServers);
    return options.mcpServers;
  }
  const root = (await projectDirs(options.cwd))[0] ?? options.cwd;
  const project = await loadProjectMcpFile(root);
  const problem = project.problems[0];
  if (problem) {
    const where = problem.path.length > 0 ? ` (${memberPath(problem.path)})` : '';
    throw new UserError('invalid_mcp_config', `${project.file ?? root}: ${problem.message}${where}`, {
      file: project.file,
    });
  }
  const servers = { ...project.servers, ...options.mcpServers };
  // This thread writes run directories and events: it masks the credentials the agents' threads do.
  registerMcpCredentials(servers);
  return servers;
}

/**
 * Registers for masking, in this thread, the credentials of the MCP servers `definition` brings
 * itself (`mcpServers: [{ name: settings }]`). The agent's thread registers them when it starts
 * the servers; this one writes the run directory and prints what the agent answered, so a token
 * the model repeats in its result must be known here too.
 *
 * @throws UserError `too_many_secrets`, as registering them where the agent runs would.
 */
export function registerDefinitionMcpCredentials(definition: AgentDefinition): void {
  const own: Record<string, McpServerConfig> = {};
  for (const ref of definition.mcpServers) if (typeof ref !== 'string') own[ref.name] = ref.config;
  registerMcpCredentials(own);
}
