/**
 * Skills: `<name>/SKILL.md` folders with `name` and `description` frontmatter. A definition's
 * `skills` are pre-loaded into the prompt; every other skill the agent can read is listed by name and
 * description (assemble.ts).
 */
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readFilePrefix, readFileWithin } from '../bounded-read.ts';
import { SKILL_BYTE_LIMIT, SKILL_FRONTMATTER_BYTE_LIMIT } from '../constants.ts';
import { projectDirs, projectFileTarget } from './project-dirs.ts';

/** Options of {@link discoverSkills} (and of `assembleSystemPrompt`'s skills section). */
export interface SkillsOptions {
  /** Home directory for `~/.troupe/skills` and `~/.claude/skills`. @default os.homedir() (honours HOME) */
  readonly homeDir?: string;
  /** Also read `.claude/skills` (project walk and home). @default true */
  readonly compat?: boolean;
}

export type SkillSource = 'project' | 'user' | 'compat';

/** A discovered skill. */
export interface Skill {
  readonly name: string;
  readonly description: string;
  /** Absolute path of the SKILL.md. */
  readonly path: string;
  /** The instructions: the SKILL.md after its frontmatter. */
  readonly body: string;
  readonly source: SkillSource;
}

/** A SKILL.md skipped for being longer than `SKILL_BYTE_LIMIT`. */
export interface SkippedSkill {
  /**
   * Its frontmatter `name`, read from its first `SKILL_FRONTMATTER_BYTE_LIMIT` bytes; its folder's
   * name when the frontmatter has none or does not close within them.
   */
  readonly name: string;
  /** Absolute path of the SKILL.md. */
  readonly path: string;
  /** Its size in bytes, as `stat` said when its frontmatter was read (undefined when it could not be). */
  readonly size: number | undefined;
  /** The bound it is over, in bytes. */
  readonly limit: number;
}

/**
 * Finds the skills visible from `cwd`, highest precedence first: project `.troupe/skills` (from
 * `cwd` up to the git root; closer wins), `~/.troupe/skills`, then compat `.claude/skills` in the
 * same order. A name found earlier shadows the same name later, also when that SKILL.md is over
 * `SKILL_BYTE_LIMIT` (it is then not among the skills: pre-loading it fails `skill_too_large`).
 */
export async function discoverSkills(cwd: string, options: SkillsOptions = {}): Promise<Map<string, Skill>> {
  return (await discoverSkillsAndSkipped(cwd, options)).skills;
}

/**
 * {@link discoverSkills}, with the SKILL.md files skipped for being over `SKILL_BYTE_LIMIT`, by
 * name, so a definition pre-loading one can say why it is not there rather than that it does not
 * exist. A skipped one shadows later ones of its name as a skill does: each name is in one map at
 * most, the first found's.
 */
export async function discoverSkillsAndSkipped(
  cwd: string,
  options: SkillsOptions = {},
): Promise<{ skills: Map<string, Skill>; tooLarge: Map<string, SkippedSkill> }> {
  const home = options.homeDir ?? os.homedir();
  const dirs = await projectDirs(cwd);
  const projectRoot = dirs[0] ?? path.resolve(cwd);
  const closerFirst = dirs.reverse();
  // The project's own skills (a cloned repository's) must stay in it; the user's may link anywhere.
  const project = (dir: string, sub: string, source: SkillSource): SkillRoot => ({
    root: path.join(dir, sub, 'skills'),
    source,
    confine: projectRoot,
  });
  const roots: SkillRoot[] = [
    ...closerFirst.map((dir) => project(dir, '.troupe', 'project')),
    { root: path.join(home, '.troupe', 'skills'), source: 'user' },
  ];
  if (options.compat ?? true) {
    roots.push(...closerFirst.map((dir) => project(dir, '.claude', 'compat')), {
      root: path.join(home, '.claude', 'skills'),
      source: 'compat',
    });
  }
  const skills = new Map<string, Skill>();
  const tooLarge = new Map<string, SkippedSkill>();
  for (const { root, source, confine } of roots) {
    for (const found of await readSkillRoot(root, source, confine)) {
      // A SKILL.md too large to read still takes its name: a smaller one of lower precedence
      // pre-loaded in its place would be a skill its author never wrote for that name.
      if (skills.has(found.name) || tooLarge.has(found.name)) continue;
      if (found.kind === 'skill') skills.set(found.name, found.skill);
      else tooLarge.set(found.name, found.skipped);
    }
  }
  return { skills, tooLarge };
}

interface SkillRoot {
  readonly root: string;
  readonly source: SkillSource;
  /** Skip a SKILL.md that resolves outside this directory. */
  readonly confine?: string;
}

/** `process.emitWarning` code of a project SKILL.md skipped because it resolves outside the project. */
export const SKILL_OUTSIDE_WARNING_CODE = 'TROUPE_SKILL_OUTSIDE';

const OUTSIDE_WARNING = { what: 'skill', code: SKILL_OUTSIDE_WARNING_CODE } as const;

/** `process.emitWarning` code of a SKILL.md skipped because it is longer than `SKILL_BYTE_LIMIT`. */
export const SKILL_TOO_LARGE_WARNING_CODE = 'TROUPE_SKILL_TOO_LARGE';

/** SKILL.md files already warned about as too large: once per file and process. */
const warnedTooLarge = new Set<string>();

function warnTooLarge(file: string): void {
  if (warnedTooLarge.has(file)) return;
  warnedTooLarge.add(file);
  process.emitWarning(
    `Skipped skill ${file}: it is longer than ${SKILL_BYTE_LIMIT} bytes, the most troupe reads of a SKILL.md (SKILL_BYTE_LIMIT)`,
    { type: 'TroupeWarning', code: SKILL_TOO_LARGE_WARNING_CODE },
  );
}

/** A SKILL.md of a skills directory: a skill, or one skipped for its size. */
type FoundSkill =
  | { readonly kind: 'skill'; readonly name: string; readonly skill: Skill }
  | { readonly kind: 'too_large'; readonly name: string; readonly skipped: SkippedSkill };

/** The SKILL.md files of one skills directory, in its folders' order. */
async function readSkillRoot(
  root: string,
  source: SkillSource,
  confine: string | undefined,
): Promise<FoundSkill[]> {
  let entries: string[];
  try {
    entries = (await readdir(root)).sort();
  } catch {
    return []; // a missing skills directory is the usual case
  }
  const found: FoundSkill[] = [];
  for (const entry of entries) {
    const file = path.join(root, entry, 'SKILL.md');
    let text: string;
    try {
      const target = confine === undefined ? file : await projectFileTarget(file, confine, OUTSIDE_WARNING);
      if (target === undefined) continue;
      // Bounded: a SKILL.md of gigabytes was read whole into the agent's thread.
      const read = await readFileWithin(target, SKILL_BYTE_LIMIT);
      if (read.kind === 'not_file') continue; // a folder named SKILL.md, a FIFO: not a skill
      if (read.kind === 'too_large') {
        warnTooLarge(file);
        const skipped = await skippedSkill(target, file, entry);
        found.push({ kind: 'too_large', name: skipped.name, skipped });
        continue;
      }
      text = read.bytes.toString('utf8');
    } catch {
      continue; // not a skill folder
    }
    const skill: Skill = { ...(await parseSkill(text, entry)), path: file, source };
    found.push({ kind: 'skill', name: skill.name, skill });
  }
  return found;
}

/**
 * A SKILL.md over the bound, named by the frontmatter at its top: a definition pre-loads a skill by
 * that name, and must hear that it is too large rather than unknown.
 */
async function skippedSkill(target: string, file: string, folderName: string): Promise<SkippedSkill> {
  const prefix = await readFilePrefix(target, SKILL_FRONTMATTER_BYTE_LIMIT).catch(() => undefined);
  const unnamed = { name: folderName, path: file, size: undefined, limit: SKILL_BYTE_LIMIT };
  if (prefix?.kind !== 'file') return unnamed;
  const text = prefix.bytes.toString('utf8');
  // The last line of the prefix may be cut (`---` of a longer line): only whole lines count, and
  // a frontmatter that does not close within them leaves the folder's name.
  const { name } = await parseSkill(text.slice(0, text.lastIndexOf('\n') + 1), folderName);
  return { ...unnamed, name, size: prefix.size };
}

/**
 * Splits a SKILL.md into frontmatter fields and body. A skill whose frontmatter is missing or not
 * valid YAML keeps its folder name and an empty description: one broken skill on disk must not
 * stop every agent from starting. The YAML parser is imported here, on the first skill found: most
 * agents have no skills, and an actor-host thread starts ~15 % faster without it.
 */
export async function parseSkill(
  text: string,
  folderName: string,
): Promise<Pick<Skill, 'name' | 'description' | 'body'>> {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const close =
    lines[0]?.trim() === '---' ? lines.findIndex((line, i) => i > 0 && line.trim() === '---') : -1;
  if (close === -1) return { name: folderName, description: '', body: lines.join('\n').trim() };
  const body = lines
    .slice(close + 1)
    .join('\n')
    .trim();
  // readYaml never throws, prints nothing and refuses alias bombs and absurd nesting.
  const { readYaml } = await import('../definition/yaml-read.ts');
  const read = readYaml(lines.slice(1, close).join('\n'), 'skill');
  const fields: unknown = read.ok ? read.value : undefined;
  const record = typeof fields === 'object' && fields !== null ? (fields as Record<string, unknown>) : {};
  const name = typeof record.name === 'string' && record.name.trim() !== '' ? record.name.trim() : folderName;
  const description = typeof record.description === 'string' ? record.description.trim() : '';
  return { name, description, body };
}

/** The skills section: pre-loaded skills in full, the others listed; `''` when there are none. */
export function renderSkillsSection(preloaded: readonly Skill[], listed: readonly Skill[]): string {
  if (preloaded.length === 0 && listed.length === 0) return '';
  const parts = ['# Skills', 'Skills are instructions for particular kinds of work.'];
  for (const skill of preloaded) {
    parts.push(`<skill name="${skill.name}">\n${skill.body}\n</skill>`);
  }
  if (listed.length > 0) {
    const lines = listed.map(
      (skill) => `- ${skill.name}: ${skill.description || '(no description)'} (${skill.path})`,
    );
    parts.push(
      `${preloaded.length > 0 ? 'Other available skills' : 'Available skills'} (read a skill's file when its description matches your task):\n${lines.join('\n')}`,
    );
  }
  return parts.join('\n\n');
}
