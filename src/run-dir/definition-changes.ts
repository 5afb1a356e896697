/**
 * Which agents of a run directory resume with a definition whose file changed since they started.
 * They run the definition their journal recorded either way; `troupe resume` says so.
 */
import { existsSync } from 'node:fs';
import { discoverAgents } from '../definition/discovery.ts';
import { definitionHash } from '../definition/load.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { readJournal } from '../journal/reader.ts';
import { journalFile, type RunDirPaths } from './run-dir.ts';
import type { WorkItem } from './session.ts';

/** One definition that changed, and the resumed agents it concerns. */
export interface DefinitionChange {
  readonly agent: string;
  /** The file as it is now (`builtin:<name>` for a built-in). */
  readonly path: string;
  readonly agentIds: readonly string[];
}

/**
 * For every work item that resumes from a journal file, compares the definition hash its Started
 * event recorded with the hash of the definition its name resolves to now (the plan's `agents`
 * files first, then discovery from `cwd`, as the supervisor resolves names).
 */
export async function changedDefinitions(
  work: readonly WorkItem[],
  paths: RunDirPaths,
  cwd: string,
  definitions: readonly AgentDefinition[],
): Promise<DefinitionChange[]> {
  const resumed = work.filter((item) => item.resume);
  if (resumed.length === 0) return [];
  const current = new Map<string, AgentDefinition>();
  for (const agent of (await discoverAgents({ cwd })).agents)
    current.set(agent.definition.name, agent.definition);
  for (const definition of definitions) current.set(definition.name, definition);
  const changes = new Map<string, { path: string; agentIds: string[] }>();
  const hashes = new Map<AgentDefinition, string>();
  for (const item of resumed) {
    const file = journalFile(paths, item.agentId);
    if (!existsSync(file)) continue;
    const started = readJournal(file).events[0];
    if (started?.type !== 'Started') continue;
    const now = current.get(started.definition.name);
    if (now === undefined) continue;
    let hash = hashes.get(now);
    if (hash === undefined) {
      hash = definitionHash(now);
      hashes.set(now, hash);
    }
    if (hash === started.definition.hash) continue;
    const change = changes.get(now.name) ?? { path: now.path, agentIds: [] };
    change.agentIds.push(item.agentId);
    changes.set(now.name, change);
  }
  return [...changes].map(([agent, change]) => ({ agent, ...change }));
}
