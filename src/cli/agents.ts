/**
 * `troupe agents list|show|validate`: what agents are visible from here, what one resolves to, and
 * what is wrong with definition files.
 */
import { basename, dirname, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { fileBlockStore } from '../blocks/file-store.ts';
import { hasBlockReferences, resolveAgentBlocks, resolveBlocks } from '../blocks/resolve.ts';
import type { BlockStore } from '../blocks/types.ts';
import type { DiscoveredAgent, DiscoveryResult } from '../definition/discovery.ts';
import { discoverAgents, pickAgent } from '../definition/discovery.ts';
import { collectDefinitionFiles, isClaudeAgentsFile } from '../definition/files.ts';
import { type LoadResult, loadDefinitionFile } from '../definition/load.ts';
import { FILE_START, formatProblem } from '../definition/problems.ts';
import type { KnownTools } from '../definition/tool-references.ts';
import type { AgentDefinition, DefinitionProblem } from '../definition/types.ts';
import { isTroupeError, UserError } from '../errors.ts';
import { assembleSystemPrompt } from '../prompt/assemble.ts';
import { ORCHESTRATION_TOOL_NAMES } from '../protocol/messages.ts';
import { defaultProviderName, PROVIDER_NAMES, type ProviderName } from '../providers/factory.ts';
import { parseModelMap, resolveModel } from '../providers/models.ts';
import { stripControl } from '../run-dir/format.ts';
import { runMcpServers } from '../supervisor/definitions.ts';
import { ORCHESTRATION_TOOLS } from '../supervisor/orchestration.ts';
import { BUILTIN_TOOL_NAMES, createToolRegistry } from '../tools/builtin/index.ts';
import {
  COMPLETE_TASK,
  declareCompleteTask,
  declareWaitForInstruction,
  WAIT_FOR_INSTRUCTION,
} from '../tools/builtin/orchestration.ts';
import { mcpServerOf } from '../tools/names.ts';
import { buildToolbox } from '../tools/toolbox.ts';
import type { Tool } from '../tools/types.ts';
import { COMMAND_HELP } from './commands.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import type { CliIO } from './shared/io.ts';

interface DiscoveryFlags {
  readonly cwd?: string;
  readonly compat: boolean;
}

interface ShowFlags extends DiscoveryFlags {
  readonly json?: boolean;
  readonly prompt?: boolean;
  readonly provider?: string;
  readonly modelMap?: string[];
}

/**
 * The tools a definition may name from here: the built-ins, `complete_task`,
 * `wait_for_instruction`, the orchestration tools a supervisor adds, and the tools of the MCP
 * servers of `.mcp.json` (not started here: any tool name of theirs is accepted).
 */
export async function knownTools(cwd: string): Promise<KnownTools> {
  let servers: string[] = [];
  try {
    servers = Object.keys(await runMcpServers({ cwd, mcpServers: {}, mcpProjectFile: true }));
  } catch {
    // A broken .mcp.json is reported by `troupe mcp list`; here its servers are simply unknown.
  }
  return {
    names: [...BUILTIN_TOOL_NAMES, COMPLETE_TASK, WAIT_FOR_INSTRUCTION, ...ORCHESTRATION_TOOL_NAMES],
    unlistedMcpServers: servers,
    configuredMcpServers: servers,
  };
}

/** Registers `troupe agents` and its subcommands on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const agents = program.command('agents').description(COMMAND_HELP.agents.description);

  agents
    .command('list')
    .description('List the agents visible from a directory, highest precedence first.')
    .option('--json', 'print a JSON array')
    .option('--cwd <dir>', 'directory to discover from (default: the current directory)', existingDirectory)
    .option('--no-compat', 'ignore Claude Code .claude/agents directories')
    .action(async (flags: DiscoveryFlags & { json?: boolean }) => {
      const cwd = resolve(flags.cwd ?? process.cwd());
      const found = await discoverAgents({ cwd, compat: flags.compat, knownTools: await knownTools(cwd) });
      reportDiscoveryErrors(io, found, cwd);
      if (flags.json) {
        io.stdout(
          `${JSON.stringify(
            found.agents.map((agent) => listEntry(agent, cwd)),
            null,
            2,
          )}\n`,
        );
        return;
      }
      io.stdout(listTable(found, cwd));
    });

  agents
    .command('show')
    .description('Show the resolved definition of an agent, with every default filled in.')
    .argument('<name>', 'agent name')
    .option('--json', 'print JSON')
    .option('--prompt', 'print the assembled system prompt instead')
    .option('--cwd <dir>', 'directory to discover from (default: the current directory)', existingDirectory)
    .option('--no-compat', 'ignore Claude Code .claude/agents directories')
    .option('--provider <name>', 'resolve the model for this provider (default: from the environment)')
    .option(
      '--model-map <alias=model...>',
      'model aliases added or overridden, e.g. sonnet=claude-sonnet-4-5',
    )
    .action(async (name: string, flags: ShowFlags) => {
      const cwd = resolve(flags.cwd ?? process.cwd());
      const found = await discoverAgents({ cwd, compat: flags.compat, knownTools: await knownTools(cwd) });
      const { definition, shadows, warnings } = pickAgent(found, name);
      for (const problem of warnings)
        io.stderr(`${stripControl(formatProblem(problem, displayPath(problem.file, cwd)))}\n`);
      const provider = providerNameFor(flags.provider);
      const model = resolveModel({
        kind: provider,
        provider,
        definitionModel: definition.model,
        ...(flags.modelMap === undefined ? {} : { modelMap: parseModelMap(flags.modelMap, '--model-map') }),
      });
      const resolved = { provider, id: model.id };
      if (flags.prompt) {
        io.stdout(`${await renderPromptForShow(definition, { cwd })}\n`);
      } else if (flags.json) {
        const { sourcePositions: _positions, text: _text, ...fields } = definition;
        const shown = { ...fields, resolvedModel: resolved, shadows, warnings: warnings.map(problemEntry) };
        io.stdout(`${JSON.stringify(shown, (_key, value: unknown) => value ?? null, 2)}\n`);
      } else {
        io.stdout(showText(definition, shadows, resolved));
      }
    });

  agents
    .command('validate')
    .description(
      'Check definition files (directories are searched for *.md). Files under a .claude/agents ' +
        'directory are read leniently. Exits 1 when any file has an error.',
    )
    .argument('<paths...>', 'definition files or directories')
    .option('--json', 'print a JSON array, one entry per file')
    .option('--lenient', 'read every file as a Claude Code file (lenient YAML, names slugified)')
    .option(
      '--cwd <dir>',
      'directory the agents run in: MCP tools and blocks are looked up from there (default: the current directory)',
      existingDirectory,
    )
    .action(async (paths: string[], flags: { json?: boolean; lenient?: boolean; cwd?: string }) => {
      const { files, unreadable } = await collectDefinitionFiles(paths);
      const cwd = resolve(flags.cwd ?? process.cwd());
      const known = await knownTools(cwd);
      const blocks = fileBlockStore({ cwd });
      const checked: Checked[] = unreadable.map(({ display, reason }) => ({
        file: display,
        result: { errors: [ioProblem(display, reason)], warnings: [] },
      }));
      for (const file of files) {
        const lenient = flags.lenient === true || isClaudeAgentsFile(file.absolute);
        const loaded = await loadDefinitionFile(file.absolute, {
          source: lenient ? 'compat' : 'project',
          mode: lenient ? 'lenient' : 'strict',
          knownTools: known,
        });
        checked.push({
          file: file.display,
          absolute: file.absolute,
          result: await withPromptProblems(await withBlockProblems(loaded, blocks), cwd),
        });
      }
      warnSameNames(checked);
      if (checked.length === 0) {
        io.stderr(`troupe: no .md files found in ${paths.join(', ')}\n`);
        setExit(1);
        return;
      }
      if (checked.some(({ result }) => result.errors.length > 0)) setExit(1);
      io.stdout(
        flags.json ? `${JSON.stringify(checked.map(validateEntry), null, 2)}\n` : validateText(checked),
      );
    });
}

/**
 * The system prompt `definition` gets in `cwd`, as the loop assembles it: the agent's admitted
 * tools (built-ins plus `complete_task` and `wait_for_instruction`), AGENTS.md and skills.
 */
export async function renderPromptForShow(
  definition: AgentDefinition,
  context: { readonly cwd: string },
): Promise<string> {
  const registry = createToolRegistry([declareCompleteTask(), declareWaitForInstruction()]);
  const blocks = await resolveAgentBlocks(definition, fileBlockStore({ cwd: context.cwd }));
  const toolbox = buildToolbox(definition, registry, {
    cwd: context.cwd,
    agentId: definition.name,
    settings: blocks.settings,
  });
  const { prompt } = blocks;
  return assembleSystemPrompt(definition, {
    cwd: context.cwd,
    tools: toolbox.promptTools,
    settings: blocks.settings,
    ...(prompt
      ? {
          instructions: {
            text: prompt.text,
            file: prompt.source,
            firstLine: prompt.textLine,
            parameters: prompt.parameters,
          },
        }
      : {}),
  });
}

function ioProblem(file: string, reason: string): DefinitionProblem {
  return {
    severity: 'error',
    code: 'io_error',
    message: `Could not read: ${reason}`,
    file,
    line: 1,
    column: 1,
    path: '',
  };
}

function reportDiscoveryErrors(io: CliIO, found: DiscoveryResult, cwd: string): void {
  for (const problem of found.problems) {
    if (problem.severity === 'error')
      io.stderr(`${stripControl(formatProblem(problem, displayPath(problem.file, cwd)))}\n`);
  }
}

/** A path relative to `cwd` when it is inside it; absolute (or `builtin:...`) otherwise. */
function displayPath(path: string, cwd: string): string {
  if (path.startsWith('builtin:')) return path;
  const inside = relative(cwd, path);
  return inside === '' || inside.startsWith('..') || resolve(cwd, inside) !== path ? path : inside;
}

/** Characters of a TOOLS cell: a definition naming dozens of MCP tools widened every row to 500+. */
const TOOLS_CELL_CHARS = 60;

/** Problem codes that mean a `tools` entry admits nothing (see tool-references.ts). */
const UNUSABLE_ENTRY_CODES: ReadonlySet<string> = new Set(['unknown_tool', 'invalid_tool_rule']);

/**
 * The `tools` entries of an agent that admit nothing, by the warnings discovery's tool check gave
 * them (the check `agents show` and `validate` print): a VS Code tool, a typo, an MCP server that is
 * not configured.
 */
function ignoredTools({ definition, warnings }: DiscoveredAgent): string[] {
  const ignored = new Set<number>();
  for (const problem of warnings) {
    const index = /^\/tools\/(\d+)$/.exec(problem.path)?.[1];
    if (index !== undefined && UNUSABLE_ENTRY_CODES.has(problem.code)) ignored.add(Number(index));
  }
  return (definition.tools ?? []).filter((_, index) => ignored.has(index));
}

/**
 * The TOOLS cell: `all`, `none`, or the entries that admit a tool, then the ignored ones
 * (`Read, Grep (ignored: Frob)`, `none (ignored: codebase, githubRepo)`).
 */
function toolsText(agent: DiscoveredAgent, cwd: string): string {
  const { tools } = agent.definition;
  if (tools === undefined) return 'all';
  if (tools.length === 0) return 'none';
  const ignored = ignoredTools(agent);
  const usable = toolsGiven(agent, cwd);
  const room = usable.length === 0 ? TOOLS_CELL_CHARS : TOOLS_CELL_CHARS / 2;
  const note = ignored.length === 0 ? '' : ` (ignored: ${fitted(ignored, room)})`;
  return `${usable.length === 0 ? 'none' : fitted(usable, TOOLS_CELL_CHARS)}${note}`;
}

/** `names` joined with `, `, cut to about `chars` characters with `… N more`. */
function fitted(names: readonly string[], chars: number): string {
  const shown: string[] = [];
  let length = 0;
  for (const name of names) {
    const more = names.length - shown.length - 1;
    const suffix = more > 0 ? `, … ${more} more` : '';
    if (shown.length > 0 && length + 2 + name.length + suffix.length > chars) break;
    shown.push(name);
    length += (shown.length > 1 ? 2 : 0) + name.length;
  }
  const rest = names.length - shown.length;
  return `${shown.join(', ')}${rest > 0 ? `, … ${rest} more` : ''}`;
}

/**
 * Orchestration tools as a Supervisor's agents get them (fanout, the library): only their
 * declarations matter here, to see which ones a definition admits; nothing calls them.
 */
const SUPERVISOR_TOOLS: readonly Tool[] = ORCHESTRATION_TOOLS.map((declaration) => ({
  ...declaration,
  execute: () => ({ ok: false, text: `${declaration.name} runs under a Supervisor only` }),
}));

/**
 * The tools an agent with a `tools` list gets under a Supervisor, by the names the model sees
 * (what a run's Started event records in `toolSpecs`): `Task` is `spawn_agent` and
 * `await_agents`, `Edit` and `MultiEdit` are one `search_replace`. MCP entries that are not
 * ignored follow as written: their tools exist once the server connects.
 */
function toolsGiven(agent: DiscoveredAgent, cwd: string): string[] {
  const { definition } = agent;
  const ignored = new Set(ignoredTools(agent));
  const mcp = (definition.tools ?? []).filter(
    (entry) => !ignored.has(entry) && mcpServerOf(entry) !== undefined,
  );
  try {
    const registry = createToolRegistry([
      declareCompleteTask(),
      declareWaitForInstruction(),
      ...SUPERVISOR_TOOLS,
    ]);
    const toolbox = buildToolbox(definition, registry, { cwd, agentId: definition.name });
    return [...toolbox.specs.map((spec) => spec.name), ...mcp];
  } catch {
    // A definition the toolbox refuses (two tools under one model-facing name) fails its runs,
    // as `agents show` says; here its entries are shown as written.
    return (definition.tools ?? []).filter((entry) => !ignored.has(entry));
  }
}

function listEntry(agent: DiscoveredAgent, cwd: string) {
  const { definition, shadows } = agent;
  return {
    name: definition.name,
    source: definition.source,
    path: definition.path,
    description: definition.description,
    tools: definition.tools ?? null,
    toolsGiven: definition.tools === undefined ? null : toolsGiven(agent, cwd),
    ignoredTools: ignoredTools(agent),
    model: definition.model,
    shadows,
  };
}

function listTable(found: DiscoveryResult, cwd: string): string {
  if (found.agents.length === 0) return 'No agents found.\n';
  const rows = [
    ['NAME', 'SOURCE', 'PATH', 'TOOLS', 'MODEL'],
    ...found.agents.map((agent) => [
      agent.definition.name,
      agent.definition.source,
      displayPath(agent.definition.path, cwd),
      toolsText(agent, cwd),
      agent.definition.model,
    ]),
  ].map((row) => row.map(stripControl));
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  const lines = rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
  for (const shadow of found.shadowed) {
    lines.push(
      `(${shadow.name} in ${displayPath(shadow.path, cwd)} is shadowed by ${displayPath(shadow.shadowedBy, cwd)})`,
    );
  }
  for (const { definition } of found.disabled) {
    lines.push(`(${definition.name} is disabled by ${displayPath(definition.path, cwd)})`);
  }
  // File names and the first lines of files are shown: a hostile one must not drive the terminal.
  return `${stripControl(lines.join('\n'))}\n`;
}

/** The resolved definition as a definition file: defaults written out, origin in YAML comments. */
function showText(
  definition: AgentDefinition,
  shadows: readonly string[],
  resolved: { readonly provider: string; readonly id: string },
): string {
  const { name, description, body, tools, completionRequirement, outputSchema, extra } = definition;
  const fields: Record<string, unknown> = {
    name,
    description,
    promptMode: definition.promptMode,
    tools: tools ?? '*',
    disallowedTools: definition.disallowedTools,
    permissionMode: definition.permissionMode,
    skills: definition.skills,
    agentsMd: definition.agentsMd,
    outputFormat: definition.outputFormat,
    bash: definition.bash,
    toolNameOverrides: definition.toolNameOverrides,
    paramNameOverrides: definition.paramNameOverrides,
    ...(completionRequirement ? { completionRequirement } : {}),
    toolConfig: definition.toolConfig,
    model: definition.model,
    maxSteps: definition.maxSteps,
    enabled: definition.enabled,
    ...(outputSchema ? { outputSchema } : {}),
    ...(definition.mcpServers.length > 0 ? { mcpServers: mcpServersField(definition) } : {}),
    ...blockFields(definition),
    ...extra,
  };
  const origin = [
    `# source: ${definition.source} (${definition.path})`,
    ...shadows.map((path) => `# shadows: ${path}`),
    `# model: ${definition.model} -> ${resolved.id} (provider ${resolved.provider})`,
  ];
  return `---\n${origin.join('\n')}\n${stringify(fields, { lineWidth: 0 })}---\n${body}\n`;
}

/** `instructions`, `settings` and `modelSettings` as a definition file writes them (only when set). */
function blockFields(definition: AgentDefinition): Record<string, unknown> {
  const { instructions, settings, modelSettings, modelSettingsBlock } = definition;
  const inline = Object.keys(modelSettings).length > 0;
  return {
    ...(instructions
      ? {
          instructions: {
            prompt: instructions.id,
            version: instructions.version,
            ...(Object.keys(instructions.parameters).length > 0
              ? { parameters: instructions.parameters }
              : {}),
          },
        }
      : {}),
    ...(settings.length > 0 ? { settings } : {}),
    ...(modelSettingsBlock || inline ? { modelSettings: { ...modelSettingsBlock, ...modelSettings } } : {}),
  };
}

/** The provider `--provider` names (checked, not built: no API key is needed to show a model). */
function providerNameFor(flag: string | undefined): ProviderName {
  if (flag === undefined) return defaultProviderName();
  const known = PROVIDER_NAMES.find((name) => name === flag);
  if (known === undefined) {
    throw new UserError(
      'unknown_provider',
      `Expected a provider name (${PROVIDER_NAMES.join(', ')}), got ${JSON.stringify(flag)}`,
      { provider: flag },
    );
  }
  return known;
}

function mcpServersField(definition: AgentDefinition): unknown[] {
  return definition.mcpServers.map((server) =>
    typeof server === 'string' ? server : { [server.name]: server.config },
  );
}

function problemEntry({ code, message, line, column, path }: DefinitionProblem) {
  return { code, message, line, column, path };
}

/**
 * `result` with the problems of resolving its blocks against `store` added: a block that does not
 * exist or has no version in range, parameters the prompt block does not declare, a block file
 * that does not read (located in that file).
 */
async function withBlockProblems(result: LoadResult, store: BlockStore): Promise<LoadResult> {
  const { definition } = result;
  if (definition === undefined || !hasBlockReferences(definition)) return result;
  const { problems } = await resolveBlocks(definition, store);
  if (problems.length === 0) return result;
  const errors = problems.filter((problem) => problem.severity === 'error');
  return {
    ...(errors.length > 0 ? {} : { definition }),
    name: definition.name,
    errors: [...result.errors, ...errors],
    warnings: [...result.warnings, ...problems.filter((problem) => problem.severity === 'warning')],
  };
}

/** Why rendering a system prompt failed, for the codes that name a mistake in a file. */
const PROMPT_PROBLEM_CODES = new Set([
  'template_error',
  'unknown_skill',
  'skill_too_large',
  'reserved_parameter',
]);

/**
 * `result` with the problem its system prompt has when rendered as `troupe run` renders it (no
 * spawn-time parameters): a template syntax error or unknown variable in the body or its prompt
 * block (`${{ settings.acme.missing }}`), a skill that does not exist. A run fails on these with
 * `invalid_request` before its first request; validate names them with their file and line.
 */
async function withPromptProblems(result: LoadResult, cwd: string): Promise<LoadResult> {
  const { definition } = result;
  if (definition === undefined || result.errors.length > 0) return result;
  try {
    await renderPromptForShow(definition, { cwd });
    return result;
  } catch (error) {
    if (!isTroupeError(error) || !PROMPT_PROBLEM_CODES.has(error.code)) throw error;
    const { file, line, column } = error.fields as { file?: unknown; line?: unknown; column?: unknown };
    // A skill is looked up from the working directory: missing here is a warning (the file may be
    // meant for another project), though a run from here fails on it.
    const skill = error.code === 'unknown_skill' || error.code === 'skill_too_large';
    const problem: DefinitionProblem = {
      severity: skill ? 'warning' : 'error',
      code: error.code === 'template_error' ? 'template_error' : 'invalid_field',
      // The message starts with its own `file:line[:column]: `.
      message: `${error.message.replace(/^.*?:\d+(?::\d+)?: /, '')}${skill ? `, looking from ${cwd}; a run from there fails on it` : ''}`,
      file: typeof file === 'string' ? file : definition.path,
      line: typeof line === 'number' ? line : 1,
      column: typeof column === 'number' ? column : 1,
      path: '',
    };
    return skill
      ? { ...result, warnings: [...result.warnings, problem] }
      : { name: definition.name, errors: [problem], warnings: result.warnings };
  }
}

/** One checked file: the path as shown, the absolute path when it was read, what reading it found. */
interface Checked {
  readonly file: string;
  readonly absolute?: string;
  readonly result: LoadResult;
}

/**
 * Adds a `shadowed` warning to each file that defines the name of an earlier file of its directory:
 * discovery takes the first in name order and never uses the others (`agents list` notes them).
 * Files of different directories are left alone: there, precedence decides on purpose.
 */
function warnSameNames(checked: Checked[]): void {
  const first = new Map<string, Checked>();
  const order = checked
    .map((entry, index) => ({ entry, index }))
    // Discovery's order: the sorted paths of one directory.
    .sort((a, b) => ((a.entry.absolute ?? '') < (b.entry.absolute ?? '') ? -1 : 1));
  for (const { entry, index } of order) {
    const { absolute, result } = entry;
    // A file with errors takes its name too: discovery then resolves the name to nothing.
    const name = result.definition?.name ?? result.name;
    if (absolute === undefined || name === undefined) continue;
    if (basename(absolute).toLowerCase() === 'readme.md') continue;
    const key = JSON.stringify([dirname(absolute), name]);
    const winner = first.get(key);
    if (winner === undefined) {
      first.set(key, entry);
      continue;
    }
    if (winner.absolute === absolute) continue;
    const problem: DefinitionProblem = {
      severity: 'warning',
      code: 'shadowed',
      message: `Agent \`${name}\` is also defined by ${winner.file} in the same directory; discovery takes the first file in name order, so ${entry.file} is never used: rename one agent or remove a file`,
      file: absolute,
      // As discovery's `shadowed` warning: at the file's `name`.
      ...(result.nameAt ?? FILE_START),
      path: '/name',
    };
    checked[index] = { ...entry, result: { ...result, warnings: [...result.warnings, problem] } };
  }
}

function validateEntry({ file, absolute, result }: Checked) {
  // Problems located in a block file say which file.
  const entry = (problem: DefinitionProblem) =>
    absolute === undefined || problem.file === absolute
      ? problemEntry(problem)
      : { ...problemEntry(problem), file: problem.file };
  return {
    file,
    ok: result.errors.length === 0,
    name: result.definition?.name ?? result.name ?? null,
    errors: result.errors.map(entry),
    warnings: result.warnings.map(entry),
  };
}

function validateText(checked: readonly Checked[]): string {
  const lines: string[] = [];
  let errors = 0;
  let warnings = 0;
  for (const { file, absolute, result } of checked) {
    for (const problem of [...result.errors, ...result.warnings].sort(
      (a, b) => a.line - b.line || a.column - b.column,
    )) {
      // A problem inside a block file names that file; the definition's own, the path as given.
      lines.push(
        stripControl(
          formatProblem(problem, absolute === undefined || problem.file === absolute ? file : problem.file),
        ),
      );
    }
    errors += result.errors.length;
    warnings += result.warnings.length;
  }
  const failed = checked.filter(({ result }) => result.errors.length > 0).length;
  lines.push(
    `${checked.length} file(s) checked: ${checked.length - failed} ok, ${failed} with errors ` +
      `(${errors} error(s), ${warnings} warning(s))`,
  );
  return `${lines.join('\n')}\n`;
}
