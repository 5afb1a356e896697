/**
 * Agent definition files a plan (or a script) names explicitly, in addition to the ones discovered
 * from the working directory: each file read strictly, a directory read as its `*.md` files.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { discoverAgents } from '../definition/discovery.ts';
import { loadDefinitionFile } from '../definition/load.ts';
import { formatProblem } from '../definition/problems.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';

/**
 * The definition files under `paths`: files as given, directories as their `*.md` files (sorted,
 * README.md left out). Paths that do not exist are returned as they are, for the loader to report.
 */
export function expandAgentPaths(paths: readonly string[]): string[] {
  const files: string[] = [];
  for (const path of paths) {
    const absolute = resolve(path);
    let isDirectory = false;
    try {
      isDirectory = statSync(absolute).isDirectory();
    } catch {
      // Missing: loadDefinitionFile reports it as an io_error problem.
    }
    if (!isDirectory) {
      files.push(absolute);
      continue;
    }
    const names = readdirSync(absolute)
      .filter((name) => name.endsWith('.md') && name.toLowerCase() !== 'readme.md')
      .sort();
    files.push(...names.map((name) => join(absolute, name)));
  }
  return files;
}

/**
 * Loads agent definition files (or directories of them) for the Supervisor's `definitions` option.
 * Throws UserError `invalid_definition` listing every error of every file when any file is broken.
 */
export async function loadAgentDefinitions(paths: readonly string[]): Promise<AgentDefinition[]> {
  const definitions: AgentDefinition[] = [];
  const errors: string[] = [];
  for (const file of expandAgentPaths(paths)) {
    const result = await loadDefinitionFile(file, { source: 'project', mode: 'strict' });
    if (result.definition) definitions.push(result.definition);
    else errors.push(...result.errors.map((problem) => formatProblem(problem)));
  }
  if (errors.length > 0) {
    throw new UserError(
      'invalid_definition',
      `Expected valid agent definitions, found ${errors.length} error(s):\n${errors.join('\n')}`,
      { paths: [...paths], errors },
    );
  }
  return definitions;
}

/** Names of the agents a supervisor working in `cwd` with `definitions` can spawn. */
export async function availableAgentNames(
  cwd: string,
  definitions: readonly AgentDefinition[],
): Promise<Set<string>> {
  const found = await discoverAgents({ cwd });
  return new Set([
    ...found.agents.map((agent) => agent.definition.name),
    ...definitions.map((definition) => definition.name),
  ]);
}

/** The definition `name` resolves to for a supervisor in `cwd` with `definitions`; undefined when none. */
export async function findAgentDefinition(
  cwd: string,
  definitions: readonly AgentDefinition[],
  name: string,
): Promise<AgentDefinition | undefined> {
  const explicit = definitions.find((definition) => definition.name === name);
  if (explicit !== undefined) return explicit;
  const found = await discoverAgents({ cwd });
  return found.agents.find((agent) => agent.definition.name === name)?.definition;
}
