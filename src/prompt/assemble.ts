/** System prompt assembly: what the model is told before it sees the task. */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { readFilePrefix } from '../bounded-read.ts';
import { DEFINITION_BYTE_LIMIT } from '../definition/constants.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import { isInside } from '../tools/confine.ts';
import type { PromptTools } from '../tools/types.ts';
import { type AgentsMdOptions, collectAgentsMd, renderAgentsMdSection } from './agents-md.ts';
import { BASE_TEMPLATE, BASE_TEMPLATE_FILE, TEMPLATE_TOOL_NAMES } from './base-template.ts';
import { detectEnvironment, localDate, type PromptEnvironment } from './environment.ts';
import {
  discoverSkillsAndSkipped,
  renderSkillsSection,
  type Skill,
  type SkillsOptions,
  type SkippedSkill,
} from './skills.ts';
import { renderTemplate } from './template.ts';

/** The part of a definition prompt assembly reads. */
export type PromptDefinition = Pick<
  AgentDefinition,
  'body' | 'promptMode' | 'skills' | 'agentsMd' | 'outputFormat' | 'path' | 'bodyLine'
>;

/** Options of {@link assembleSystemPrompt}: where the agent runs, its tools, and the template's values. */
export interface AssembleOptions {
  /** The agent's working directory (`working_directory`, and where AGENTS.md and skills are found). */
  readonly cwd: string;
  /** The agent's tools as its toolbox admits them (`Toolbox.promptTools`). */
  readonly tools: PromptTools;
  /** @default detectEnvironment() */
  readonly environment?: PromptEnvironment;
  /** Extra template variables for `full` bodies. Names must not clash with troupe's own. */
  readonly parameters?: Readonly<Record<string, unknown>>;
  /**
   * The agent's instructions from a prompt block, in place of the definition's body: rendered as
   * a template (in either prompt mode) with its parameter values as variables.
   */
  readonly instructions?: PromptInstructions;
  /**
   * Values of the agent's settings blocks, by block id: templates read them as
   * `settings.<block id>.<key>` (`${{ settings.acme.weights.urgency }}`). @default {}
   */
  readonly settings?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly agentsMd?: AgentsMdOptions;
  readonly skills?: SkillsOptions;
  /** The clock for `current_date`. @default new Date() */
  readonly now?: Date;
}

/** A prompt block's template and the values of its parameters. */
export interface PromptInstructions {
  readonly text: string;
  /** Where the block was read from (a file, or `memory:<id>@<version>`), for template errors. */
  readonly file: string;
  /** 1-based line of `file` where `text` starts. */
  readonly firstLine: number;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Template variable names troupe sets itself. */
export const PROMPT_VARIABLES = [
  'tools',
  'settings',
  'os_name',
  'shell_path',
  'working_directory',
  'current_date',
] as const;

/**
 * Assembles an agent's system prompt. `extend`: troupe's base template, the body as written, the
 * AGENTS.md section (when `agentsMd`), the skills section. `full`: the body rendered as a template,
 * then the same two sections.
 *
 * Throws UserError `template_error` (fields `file`, `line`, `column` in the definition file) for a
 * template syntax error or unknown variable, `unknown_skill` (fields `file`, `line` when found,
 * `skill`, `available`) for a skill that does not exist, `skill_too_large` (fields `file`, `line`,
 * `skill`, `skillFile`, `size`, `limit`) for one whose SKILL.md is over `SKILL_BYTE_LIMIT`, and `reserved_parameter` for a parameter
 * named like one of {@link PROMPT_VARIABLES}.
 */
export async function assembleSystemPrompt(def: PromptDefinition, options: AssembleOptions): Promise<string> {
  const parameters = options.parameters ?? {};
  const blockParameters = options.instructions?.parameters ?? {};
  for (const name of PROMPT_VARIABLES) {
    if (Object.hasOwn(parameters, name) || Object.hasOwn(blockParameters, name)) {
      throw new UserError(
        'reserved_parameter',
        `The prompt parameter \`${name}\` clashes with troupe's template variable of that name`,
        { parameter: name },
      );
    }
  }
  const environment = options.environment ?? detectEnvironment();
  const tools = {
    ...Object.fromEntries(TEMPLATE_TOOL_NAMES.map((name) => [name, ''])),
    ...options.tools.names,
  };
  const variables: Record<string, unknown> = {
    ...parameters,
    tools,
    settings: settingsVariable(options.settings ?? {}),
    os_name: environment.osName,
    shell_path: environment.shellPath,
    working_directory: path.resolve(options.cwd),
    current_date: localDate(options.now ?? new Date()),
  };

  const skillsSection = await skillsFor(def, options);
  const agentsMdSection = def.agentsMd
    ? renderAgentsMdSection(await collectAgentsMd(options.cwd, options.agentsMd))
    : '';

  const instructions = options.instructions;
  const body = instructions
    ? await renderTemplate(
        { text: instructions.text, file: instructions.file, firstLine: instructions.firstLine },
        { ...variables, ...blockParameters },
      )
    : undefined;
  let head: string[];
  if (def.promptMode === 'full') {
    head = [
      body ?? (await renderTemplate({ text: def.body, file: def.path, firstLine: def.bodyLine }, variables)),
    ];
  } else {
    const baseVariables = {
      ...variables,
      output_format: def.outputFormat,
      background_tools: options.tools.background.map((name) => `\`${name}\``).join(', '),
    };
    const base = await renderTemplate(
      { text: BASE_TEMPLATE, file: BASE_TEMPLATE_FILE, firstLine: 1 },
      baseVariables,
    );
    head = [base, body ?? def.body];
  }
  return [...head, agentsMdSection, skillsSection]
    .map((section) => section.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd())
    .filter((section) => section !== '')
    .join('\n\n');
}

/**
 * The `settings` template variable: each block's values under its id, split at the dots, so
 * `settings.acme.weights.urgency` reads key `urgency` of block `acme.weights`. Throws UserError
 * `settings_conflict` when one id continues another (`acme.a` and `acme.a.b`): `settings.acme.a.b`
 * would then mean two things.
 */
export function settingsVariable(
  settings: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  const namespaces = new Set<object>([root]);
  for (const id of Object.keys(settings)) {
    const segments = id.split('.');
    let node: Record<string, unknown> = root;
    for (const [index, segment] of segments.entries()) {
      const existing = node[segment];
      const last = index === segments.length - 1;
      if (existing !== undefined && (last || !namespaces.has(existing as object))) {
        const other = Object.keys(settings).find(
          (candidate) =>
            candidate !== id && (candidate.startsWith(`${id}.`) || id.startsWith(`${candidate}.`)),
        );
        throw new UserError(
          'settings_conflict',
          `Settings blocks \`${id}\` and \`${other ?? id}\` cannot both be shown under \`settings.\`: one id continues the other`,
          { id, other },
        );
      }
      if (last) node[segment] = { ...(settings[id] ?? {}) };
      else {
        const next: Record<string, unknown> = (existing as Record<string, unknown> | undefined) ?? {};
        if (existing === undefined) {
          node[segment] = next;
          namespaces.add(next);
        }
        node = next;
      }
    }
  }
  return root;
}

/**
 * Checks that every skill `def` pre-loads exists, as {@link assembleSystemPrompt} will: throws
 * its UserError `unknown_skill` or `skill_too_large`. For callers that must fail before they create anything.
 */
export async function checkSkills(
  def: Pick<PromptDefinition, 'skills' | 'path' | 'bodyLine'>,
  cwd: string,
  options?: SkillsOptions,
): Promise<void> {
  if (def.skills.length === 0) return;
  const { skills, tooLarge } = await discoverSkillsAndSkipped(cwd, options);
  await preloadedSkills(def, skills, tooLarge);
}

async function preloadedSkills(
  def: Pick<PromptDefinition, 'skills' | 'path' | 'bodyLine'>,
  skills: ReadonlyMap<string, Skill>,
  tooLarge: ReadonlyMap<string, SkippedSkill>,
): Promise<Skill[]> {
  const preloaded = [];
  for (const name of def.skills) {
    const skill = skills.get(name);
    const skipped = tooLarge.get(name);
    if (skill === undefined && skipped !== undefined) throw await skillTooLarge(def, skipped);
    if (skill === undefined) throw await unknownSkill(def, name, [...skills.keys()]);
    preloaded.push(skill);
  }
  return preloaded;
}

async function skillsFor(def: PromptDefinition, options: AssembleOptions): Promise<string> {
  const { skills, tooLarge } = await discoverSkillsAndSkipped(options.cwd, options.skills);
  const preloaded = await preloadedSkills(def, skills, tooLarge);
  // The model is told to read a listed skill's file: one read_file cannot reach (outside the
  // working directory, e.g. ~/.claude/skills) would only cost it a failed call.
  const realCwd = await realpath(options.cwd).catch(() => path.resolve(options.cwd));
  const listed = [];
  for (const skill of skills.values()) {
    if (def.skills.includes(skill.name)) continue;
    if (isInside(realCwd, await realpath(skill.path).catch(() => skill.path))) listed.push(skill);
  }
  return renderSkillsSection(preloaded, listed);
}

async function skillTooLarge(
  def: Pick<PromptDefinition, 'path' | 'bodyLine'>,
  skipped: SkippedSkill,
): Promise<UserError> {
  const line = await frontmatterLineOf(def, skipped.name);
  const size = skipped.size === undefined ? 'longer than' : `${skipped.size} bytes, over`;
  return new UserError(
    'skill_too_large',
    `${def.path}${line === undefined ? '' : `:${line}`}: skill \`${skipped.name}\` is not loaded: ` +
      `${skipped.path} is ${size} ${skipped.limit} bytes, the most troupe reads of a SKILL.md (SKILL_BYTE_LIMIT)`,
    {
      file: def.path,
      ...(line === undefined ? {} : { line }),
      skill: skipped.name,
      skillFile: skipped.path,
      ...(skipped.size === undefined ? {} : { size: skipped.size }),
      limit: skipped.limit,
    },
  );
}

async function unknownSkill(
  def: Pick<PromptDefinition, 'path' | 'bodyLine'>,
  name: string,
  available: string[],
): Promise<UserError> {
  const line = await frontmatterLineOf(def, name);
  const known = available.length > 0 ? `available skills: ${available.join(', ')}` : 'no skills were found';
  return new UserError(
    'unknown_skill',
    `${def.path}${line === undefined ? '' : `:${line}`}: unknown skill \`${name}\` (${known})`,
    { file: def.path, ...(line === undefined ? {} : { line }), skill: name, available },
  );
}

/**
 * The first frontmatter line of the definition file that mentions `text`, when the file is
 * readable. Only its first DEFINITION_BYTE_LIMIT bytes are read (the definition was loaded within
 * them): the file may have grown since, or been replaced by a device, and was read whole.
 */
async function frontmatterLineOf(
  def: Pick<PromptDefinition, 'path' | 'bodyLine'>,
  text: string,
): Promise<number | undefined> {
  if (def.path.startsWith('builtin:')) return undefined;
  let content: string;
  try {
    const read = await readFilePrefix(def.path, DEFINITION_BYTE_LIMIT);
    if (read.kind !== 'file') return undefined;
    content = read.bytes.toString('utf8');
  } catch {
    return undefined;
  }
  const lines = content.split('\n').slice(0, Math.max(0, def.bodyLine - 1));
  const index = lines.findIndex((line) => line.includes(text));
  return index === -1 ? undefined : index + 1;
}
