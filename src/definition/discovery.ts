/**
 * Finding agent definitions: which directories are searched, in which order, and which definition
 * wins when several share a name.
 *
 * Precedence, highest first: project `.troupe/agents/` from cwd up to the git root (closer wins),
 * user `~/.troupe/agents/`, compat `.claude/agents/` in the same project walk then
 * `~/.claude/agents/`, built-ins. A definition with `enabled: false` takes its name's place and
 * hides it, so a project can switch off a user or built-in agent.
 */

import { readdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { UserError } from '../errors.ts';
import { loadBuiltins } from './builtins.ts';
import { UNKNOWN_AGENT_LISTED_NAMES } from './constants.ts';
import { suggestion } from './fields.ts';
import { type LoadResult, loadDefinitionFile } from './load.ts';
import { FILE_START } from './problems.ts';
import type { KnownTools } from './tool-references.ts';
import type { AgentDefinition, DefinitionProblem, DefinitionSource } from './types.ts';

/** Where to look for definitions. */
export interface DiscoveryOptions {
  /** Directory the project walk starts from. @default process.cwd() */
  readonly cwd?: string;
  /** Home directory for the user and compat dirs. @default os.homedir() (which honours `HOME`) */
  readonly home?: string;
  /** Also read Claude Code's `.claude/agents/` dirs (leniently). @default true */
  readonly compat?: boolean;
  /** Include the built-in agents. @default true */
  readonly builtins?: boolean;
  /** Canonical tool names to check tool references against. */
  readonly knownTools?: ReadonlySet<string> | KnownTools;
}

/** A searched directory. */
export interface AgentDir {
  readonly dir: string;
  readonly source: DefinitionSource;
}

/** A definition that won its name. */
export interface DiscoveredAgent {
  readonly definition: AgentDefinition;
  /** Paths of the lower-precedence definitions with the same name, highest first. */
  readonly shadows: readonly string[];
  readonly warnings: readonly DefinitionProblem[];
}

/** A definition that lost its name to a higher-precedence one. */
export interface ShadowedDefinition {
  readonly name: string;
  readonly path: string;
  readonly source: DefinitionSource;
  /** Path of the definition that wins the name. */
  readonly shadowedBy: string;
}

/** A file that would have won its name but has errors; the name resolves to nothing. */
export interface InvalidDefinition {
  readonly name: string;
  readonly path: string;
  readonly source: DefinitionSource;
  readonly errors: readonly DefinitionProblem[];
}

/** Everything discovery found. */
export interface DiscoveryResult {
  /** Usable agents, ordered by source precedence, then name. */
  readonly agents: readonly DiscoveredAgent[];
  /** Winning definitions with `enabled: false`: their names are hidden. */
  readonly disabled: readonly DiscoveredAgent[];
  readonly invalid: readonly InvalidDefinition[];
  readonly shadowed: readonly ShadowedDefinition[];
  /** Every problem in every file read, plus a `shadowed` warning per shadowed definition. */
  readonly problems: readonly DefinitionProblem[];
  /** The directories searched, highest precedence first (missing ones included). */
  readonly dirs: readonly AgentDir[];
}

const SOURCE_RANK: Record<DefinitionSource, number> = { project: 0, user: 1, compat: 2, builtin: 3 };

/** The agent directories for `options`, highest precedence first, without duplicates. */
export async function agentDirs(options: DiscoveryOptions = {}): Promise<AgentDir[]> {
  const cwd = resolve(options.cwd ?? process.cwd());
  const home = resolve(options.home ?? homedir());
  const walk = await projectWalk(cwd);
  const dirs: AgentDir[] = [
    ...walk.map((dir) => ({ dir: join(dir, '.troupe', 'agents'), source: 'project' as const })),
    { dir: join(home, '.troupe', 'agents'), source: 'user' },
  ];
  if (options.compat ?? true) {
    dirs.push(...walk.map((dir) => ({ dir: join(dir, '.claude', 'agents'), source: 'compat' as const })));
    dirs.push({ dir: join(home, '.claude', 'agents'), source: 'compat' });
  }
  // The home directory can be part of the project walk; its dirs then count once, as project dirs.
  const seen = new Set<string>();
  return dirs.filter(({ dir }) => !seen.has(dir) && seen.add(dir));
}

/** cwd and its ancestors up to the nearest one holding `.git`; just cwd when there is none. */
async function projectWalk(cwd: string): Promise<string[]> {
  const walk: string[] = [];
  for (let dir = cwd; ; dir = dirname(dir)) {
    walk.push(dir);
    if (await exists(join(dir, '.git'))) return walk;
    if (dirname(dir) === dir) return [cwd];
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** The `*.md` files of `dir`, sorted; none when it is missing or unreadable. README.md is not an agent. */
async function definitionFiles(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((entry) => (entry.isFile() || entry.isSymbolicLink()) && entry.name.endsWith('.md'))
      .filter((entry) => entry.name.toLowerCase() !== 'readme.md')
      .map((entry) => join(dir, entry.name))
      .sort();
  } catch {
    return [];
  }
}

interface Candidate {
  readonly source: DefinitionSource;
  readonly path: string;
  readonly result: LoadResult;
}

/** Finds every definition visible from `options.cwd` and resolves names by precedence. */
export async function discoverAgents(options: DiscoveryOptions = {}): Promise<DiscoveryResult> {
  const dirs = await agentDirs(options);
  const perDir = await Promise.all(
    dirs.map(async ({ dir, source }) => {
      const files = await definitionFiles(dir);
      const mode = source === 'compat' ? 'lenient' : 'strict';
      return Promise.all(
        files.map(async (path) => ({
          source,
          path,
          result: await loadDefinitionFile(path, { source, mode, knownTools: options.knownTools }),
        })),
      );
    }),
  );
  const candidates: Candidate[] = perDir.flat();
  if (options.builtins ?? true) {
    for (const result of loadBuiltins(options.knownTools)) {
      const path = result.definition?.path ?? `builtin:${result.name ?? 'unknown'}`;
      candidates.push({ source: 'builtin', path, result });
    }
  }
  return { ...resolveNames(candidates), dirs };
}

function resolveNames(candidates: readonly Candidate[]): Omit<DiscoveryResult, 'dirs'> {
  const winners = new Map<string, { candidate: Candidate; shadows: string[] }>();
  const shadowed: ShadowedDefinition[] = [];
  const problems: DefinitionProblem[] = [];
  for (const candidate of candidates) {
    const { result, path, source } = candidate;
    problems.push(...result.errors, ...result.warnings);
    const name = result.definition?.name ?? result.name;
    if (name === undefined) continue;
    const winner = winners.get(name);
    if (!winner) {
      winners.set(name, { candidate, shadows: [] });
      continue;
    }
    winner.shadows.push(path);
    shadowed.push({ name, path, source, shadowedBy: winner.candidate.path });
    problems.push({
      severity: 'warning',
      code: 'shadowed',
      message: `Agent \`${name}\` is shadowed by ${winner.candidate.path} (${winner.candidate.source}), which takes precedence`,
      file: path,
      ...(result.nameAt ?? FILE_START),
      path: '/name',
    });
  }

  const agents: DiscoveredAgent[] = [];
  const disabled: DiscoveredAgent[] = [];
  const invalid: InvalidDefinition[] = [];
  for (const [name, { candidate, shadows }] of winners) {
    const { definition, errors, warnings } = candidate.result;
    if (!definition) {
      invalid.push({ name, path: candidate.path, source: candidate.source, errors });
      continue;
    }
    (definition.enabled ? agents : disabled).push({ definition, shadows, warnings });
  }
  const order = (a: DiscoveredAgent, b: DiscoveredAgent) =>
    SOURCE_RANK[a.definition.source] - SOURCE_RANK[b.definition.source] ||
    a.definition.name.localeCompare(b.definition.name);
  return { agents: agents.sort(order), disabled: disabled.sort(order), invalid, shadowed, problems };
}

/**
 * The agent called `name` in `found`. Throws UserError `unknown_agent` (listing the available
 * names) when there is none or it is disabled, and `invalid_definition` when the file that would
 * define it has errors.
 */
export function pickAgent(found: DiscoveryResult, name: string): DiscoveredAgent {
  const agent = found.agents.find((candidate) => candidate.definition.name === name);
  if (agent) return agent;
  const broken = found.invalid.find((candidate) => candidate.name === name);
  if (broken) {
    const first = broken.errors[0];
    const detail = first ? `; first: ${first.file}:${first.line}:${first.column}: ${first.message}` : '';
    throw new UserError(
      'invalid_definition',
      `Expected a valid definition for agent \`${name}\`, found ${broken.errors.length} error(s)${detail}`,
      { name, path: broken.path, errors: broken.errors },
    );
  }
  const available = found.agents.map((candidate) => candidate.definition.name);
  const off = found.disabled.find((candidate) => candidate.definition.name === name);
  // A file named after the agent that could not be read at all (too large, not UTF-8, no
  // frontmatter) has no name to be found by: say so rather than only that the name is unknown.
  const unread = found.problems.find(
    (problem) => problem.severity === 'error' && basename(problem.file, extname(problem.file)) === name,
  );
  const why = off
    ? ` (${off.definition.path} sets \`enabled: false\`)`
    : unread
      ? ` (${unread.file}:${unread.line}:${unread.column}: ${unread.message})`
      : '';
  const listed = available.slice(0, UNKNOWN_AGENT_LISTED_NAMES).join(', ') || 'none';
  const more =
    available.length > UNKNOWN_AGENT_LISTED_NAMES
      ? ` and ${available.length - UNKNOWN_AGENT_LISTED_NAMES} more (\`troupe agents list\`)`
      : '';
  throw new UserError(
    'unknown_agent',
    `Expected the name of an available agent, found \`${name}\`${why || suggestion(name, available)}; available: ${listed}${more}`,
    { name, available },
  );
}

/** Discovers agents and returns the definition called `name` (errors as for {@link pickAgent}). */
export async function getAgent(name: string, options: DiscoveryOptions = {}): Promise<AgentDefinition> {
  return pickAgent(await discoverAgents(options), name).definition;
}
