/** The definitions a supervisor spawns by name: explicit ones first, then discovery from its cwd. */
import { discoverAgents } from '../definition/discovery.ts';
import type { AgentDefinition } from '../definition/types.ts';
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
