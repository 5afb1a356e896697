/**
 * The file-backed block store: `.troupe/blocks/<id>/<version>.md` (prompt blocks) and
 * `.troupe/blocks/<id>/<version>.yaml` (settings and model-settings blocks), found like agent
 * definitions: the working directory and each parent up to the git root (closer wins), then
 * `~/.troupe/blocks/`. The closest directory that has a block id (in the kind's format) provides
 * every version of it: a project's `acme.intake` shadows the user's whole, so a range never picks
 * a version from an unrelated home directory.
 */
import { readdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, extname, join, resolve } from 'node:path';
import { readFileWithin } from '../bounded-read.ts';
import { DEFINITION_BYTE_LIMIT } from '../definition/constants.ts';
import type { DefinitionProblem } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import { projectDirs } from '../prompt/project-dirs.ts';
import { isBlockId, isExactVersion, sortVersionsDescending } from './ids.ts';
import type { Block, BlockKind, BlockStore } from './types.ts';

/** Where to look for block files. */
export interface BlockDirsOptions {
  /** Directory the project walk starts from. @default process.cwd() */
  readonly cwd?: string;
  /** Home directory for `~/.troupe/blocks`. @default os.homedir() (which honours `HOME`) */
  readonly home?: string;
}

/** A searched blocks directory. */
export interface BlockDir {
  readonly dir: string;
  readonly source: 'project' | 'user';
}

/** The blocks directories, highest precedence first, without duplicates. */
export async function blockDirs(options: BlockDirsOptions = {}): Promise<BlockDir[]> {
  const cwd = resolve(options.cwd ?? process.cwd());
  const home = resolve(options.home ?? homedir());
  const walk = (await projectDirs(cwd)).reverse();
  const dirs: BlockDir[] = [
    ...walk.map((dir) => ({ dir: join(dir, '.troupe', 'blocks'), source: 'project' as const })),
    { dir: join(home, '.troupe', 'blocks'), source: 'user' },
  ];
  const seen = new Set<string>();
  return dirs.filter(({ dir }) => !seen.has(dir) && seen.add(dir));
}

/** One block id in one directory, with every version it holds in one format. */
export interface DiscoveredBlock {
  readonly id: string;
  /** `md`: a prompt block; `yaml`: a settings or model-settings block. */
  readonly format: 'md' | 'yaml';
  readonly source: 'project' | 'user';
  /** The `<id>` directory. */
  readonly dir: string;
  /** Versions, highest first, with their files. */
  readonly versions: readonly { readonly version: string; readonly path: string }[];
  /** `<id>` directories of lower precedence that this one shadows (same format). */
  readonly shadows: readonly string[];
}

/** Everything {@link discoverBlocks} found. */
export interface BlockDiscovery {
  /** Winning blocks, ordered by id then format. */
  readonly blocks: readonly DiscoveredBlock[];
  /** Directory and file names that are not block ids or versions (warnings; they are ignored). */
  readonly problems: readonly DefinitionProblem[];
  readonly dirs: readonly BlockDir[];
}

/** Lists every block visible from `options.cwd`, for `troupe blocks list`. */
export async function discoverBlocks(options: BlockDirsOptions = {}): Promise<BlockDiscovery> {
  const dirs = await blockDirs(options);
  const winners = new Map<string, { block: DiscoveredBlock; shadows: string[] }>();
  const problems: DefinitionProblem[] = [];
  for (const { dir, source } of dirs) {
    for (const name of await entries(dir)) {
      const idDir = join(dir, name);
      if (!(await isDirectory(idDir))) continue;
      if (!isBlockId(name)) {
        problems.push(
          warning(
            idDir,
            `Expected a block id such as \`acme.intake\` as the directory name, found \`${name}\`; ignored`,
          ),
        );
        continue;
      }
      for (const file of await entries(idDir)) {
        const extension = extname(file);
        if (extension === '.md' || extension === '.yaml') continue;
        const hint = extension === '.yml' ? `; rename it \`${basename(file, extension)}.yaml\`` : '; ignored';
        problems.push(
          warning(
            join(idDir, file),
            `Expected a block file ending in .md (a prompt block) or .yaml (a settings or model-settings block), found \`${file}\`${hint}`,
          ),
        );
      }
      for (const format of ['md', 'yaml'] as const) {
        const versions = await versionFiles(idDir, `.${format}`, problems);
        if (versions.length === 0) continue;
        const key = `${name}\n${format}`;
        const winner = winners.get(key);
        if (winner) winner.shadows.push(idDir);
        else
          winners.set(key, {
            block: { id: name, format, source, dir: idDir, versions, shadows: [] },
            shadows: [],
          });
      }
    }
  }
  const blocks = [...winners.values()]
    .map(({ block, shadows }) => ({ ...block, shadows }))
    .sort((a, b) => a.id.localeCompare(b.id) || a.format.localeCompare(b.format));
  return { blocks, problems, dirs };
}

/**
 * The file-backed {@link BlockStore} for `options.cwd`. Directories are searched on every lookup:
 * a version published while a supervisor runs is seen by agents spawned afterwards (an agent
 * already running keeps the versions it started with).
 */
export function fileBlockStore(options: BlockDirsOptions = {}): BlockStore {
  let dirs: Promise<BlockDir[]> | undefined;
  const searched = () => (dirs ??= blockDirs(options));
  const provider = async (kind: BlockKind, id: string) => {
    if (!isBlockId(id)) return undefined;
    for (const { dir } of await searched()) {
      const versions = await versionFiles(join(dir, id), blockExtension(kind), []);
      if (versions.length > 0) return versions;
    }
    return undefined;
  };
  return {
    description: `.troupe/blocks from ${resolve(options.cwd ?? process.cwd())} up to the git root, then ${join(resolve(options.home ?? homedir()), '.troupe', 'blocks')}`,
    async versions(kind, id) {
      return ((await provider(kind, id)) ?? []).map((entry) => entry.version);
    },
    async read(kind, id, version) {
      const file = (await provider(kind, id))?.find((entry) => entry.version === version)?.path;
      return file === undefined ? undefined : readBlockFile(file, kind, id, version);
    },
  };
}

/** The file extension of each kind in a file store. */
export function blockExtension(kind: BlockKind): '.md' | '.yaml' {
  return kind === 'prompt' ? '.md' : '.yaml';
}

/**
 * Reads and parses one block file; throws UserError `invalid_block` with its problems. Its
 * warnings (unknown keys, which are ignored) are in the block's `warnings`. The block
 * parser (with the YAML parser) is imported on the first block read, not when a thread starts.
 */
export async function readBlockFile(
  file: string,
  kind: BlockKind,
  id: string,
  version: string,
): Promise<Block> {
  let text: string;
  try {
    const read = await readFileWithin(file, DEFINITION_BYTE_LIMIT);
    if (read.kind === 'too_large')
      throw new Error(`expected at most ${DEFINITION_BYTE_LIMIT} bytes, found more`);
    if (read.kind === 'not_file') throw new Error('expected a file, found no regular file');
    text = read.bytes.toString('utf8');
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const problem: DefinitionProblem = {
      severity: 'error',
      code: 'io_error',
      message: `Could not read the block file: ${reason}`,
      file,
      line: 1,
      column: 1,
      path: '',
    };
    throw new UserError('invalid_block', `${file}: ${problem.message}`, {
      id,
      version,
      file,
      problems: [problem],
    });
  }
  const { parseBlockText } = await import('./parse.ts');
  const parsed = parseBlockText(text, { kind, id, version, file });
  if (parsed.block) {
    return parsed.warnings.length === 0 ? parsed.block : { ...parsed.block, warnings: parsed.warnings };
  }
  const first = parsed.errors[0];
  throw new UserError(
    'invalid_block',
    `Block ${id}@${version} (${file}) has ${parsed.errors.length} error(s)${first ? `; first: ${first.line}:${first.column}: ${first.message}` : ''}`,
    { id, version, file, problems: parsed.errors },
  );
}

async function versionFiles(
  idDir: string,
  extension: string,
  problems: DefinitionProblem[],
): Promise<{ version: string; path: string }[]> {
  const found: { version: string; path: string }[] = [];
  for (const name of await entries(idDir)) {
    if (extname(name) !== extension) continue;
    const version = basename(name, extension);
    const path = join(idDir, name);
    if (!isExactVersion(version)) {
      problems.push(
        warning(
          path,
          `Expected a file named after an exact version such as \`1.2.0${extension}\`, found \`${name}\`; ignored`,
        ),
      );
      continue;
    }
    found.push({ version, path });
  }
  const order = sortVersionsDescending(found.map((entry) => entry.version));
  return order.flatMap((version) => found.filter((entry) => entry.version === version));
}

async function entries(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch {
    return [];
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function warning(file: string, message: string): DefinitionProblem {
  return { severity: 'warning', code: 'invalid_field', message, file, line: 1, column: 1, path: '' };
}
