/** System prompt assembly: what the model is told before it sees the task. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import type { PromptTools } from '../tools/types.ts';
import { type AgentsMdOptions, collectAgentsMd, renderAgentsMdSection } from './agents-md.ts';
import { BASE_TEMPLATE, BASE_TEMPLATE_FILE, BASE_TEMPLATE_TOOLS } from './base-template.ts';
import { detectEnvironment, localDate, type PromptEnvironment } from './environment.ts';
import { discoverSkills, renderSkillsSection, type SkillsOptions } from './skills.ts';
import { renderTemplate } from './template.ts';

/** The part of a definition prompt assembly reads. */
export type PromptDefinition = Pick<
  AgentDefinition,
  'body' | 'promptMode' | 'skills' | 'agentsMd' | 'outputFormat' | 'path' | 'bodyLine'
>;

export interface AssembleOptions {
  /** The agent's working directory (`working_directory`, and where AGENTS.md and skills are found). */
  readonly cwd: string;
  /** The agent's tools as its toolbox admits them (`Toolbox.promptTools`). */
  readonly tools: PromptTools;
  /** @default detectEnvironment() */
  readonly environment?: PromptEnvironment;
  /** Extra template variables for `full` bodies. Names must not clash with troupe's own. */
  readonly parameters?: Readonly<Record<string, unknown>>;
  readonly agentsMd?: AgentsMdOptions;
  readonly skills?: SkillsOptions;
  /** The clock for `current_date`. @default new Date() */
  readonly now?: Date;
}

/** Template variable names troupe sets itself. */
export const PROMPT_VARIABLES = [
  'tools',
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
 * `skill`, `available`) for a skill that does not exist, and `reserved_parameter` for a parameter
 * named like one of {@link PROMPT_VARIABLES}.
 */
export async function assembleSystemPrompt(def: PromptDefinition, options: AssembleOptions): Promise<string> {
  const parameters = options.parameters ?? {};
  for (const name of PROMPT_VARIABLES) {
    if (Object.hasOwn(parameters, name)) {
      throw new UserError(
        'reserved_parameter',
        `The prompt parameter \`${name}\` clashes with troupe's template variable of that name`,
        { parameter: name },
      );
    }
  }
  const environment = options.environment ?? detectEnvironment();
  const variables: Record<string, unknown> = {
    ...parameters,
    tools: options.tools.names,
    os_name: environment.osName,
    shell_path: environment.shellPath,
    working_directory: path.resolve(options.cwd),
    current_date: localDate(options.now ?? new Date()),
  };

  const skillsSection = await skillsFor(def, options);
  const agentsMdSection = def.agentsMd
    ? renderAgentsMdSection(await collectAgentsMd(options.cwd, options.agentsMd))
    : '';

  let head: string[];
  if (def.promptMode === 'full') {
    head = [await renderTemplate({ text: def.body, file: def.path, firstLine: def.bodyLine }, variables)];
  } else {
    const baseVariables = {
      ...variables,
      tools: { ...Object.fromEntries(BASE_TEMPLATE_TOOLS.map((name) => [name, ''])), ...options.tools.names },
      output_format: def.outputFormat,
      background_tools: options.tools.background.map((name) => `\`${name}\``).join(', '),
    };
    const base = await renderTemplate(
      { text: BASE_TEMPLATE, file: BASE_TEMPLATE_FILE, firstLine: 1 },
      baseVariables,
    );
    head = [base, def.body];
  }
  return [...head, agentsMdSection, skillsSection]
    .map((section) => section.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd())
    .filter((section) => section !== '')
    .join('\n\n');
}

async function skillsFor(def: PromptDefinition, options: AssembleOptions): Promise<string> {
  const skills = await discoverSkills(options.cwd, options.skills);
  const preloaded = [];
  for (const name of def.skills) {
    const skill = skills.get(name);
    if (skill === undefined) throw await unknownSkill(def, name, [...skills.keys()]);
    preloaded.push(skill);
  }
  const listed = [...skills.values()].filter((skill) => !def.skills.includes(skill.name));
  return renderSkillsSection(preloaded, listed);
}

async function unknownSkill(def: PromptDefinition, name: string, available: string[]): Promise<UserError> {
  const line = await frontmatterLineOf(def, name);
  const known = available.length > 0 ? `available skills: ${available.join(', ')}` : 'no skills were found';
  return new UserError(
    'unknown_skill',
    `${def.path}${line === undefined ? '' : `:${line}`}: unknown skill \`${name}\` (${known})`,
    { file: def.path, ...(line === undefined ? {} : { line }), skill: name, available },
  );
}

/** The first frontmatter line of the definition file that mentions `text`, when the file is readable. */
async function frontmatterLineOf(def: PromptDefinition, text: string): Promise<number | undefined> {
  if (def.path.startsWith('builtin:')) return undefined;
  let content: string;
  try {
    content = await readFile(def.path, 'utf8');
  } catch {
    return undefined;
  }
  const lines = content.split('\n').slice(0, Math.max(0, def.bodyLine - 1));
  const index = lines.findIndex((line) => line.includes(text));
  return index === -1 ? undefined : index + 1;
}
