/**
 * `troupe blocks list` and `troupe blocks show ID [RANGE]`: the prompt, settings and model-settings
 * blocks visible from a directory (`.troupe/blocks/` up to the git root, then `~/.troupe/blocks/`).
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { type DiscoveredBlock, discoverBlocks, readBlockFile } from '../blocks/file-store.ts';
import { highestSatisfying, isBlockId, isVersionRange } from '../blocks/ids.ts';
import { blockHash } from '../blocks/parse.ts';
import type { BlockKind } from '../blocks/types.ts';
import { formatProblem } from '../definition/problems.ts';
import type { DefinitionProblem } from '../definition/types.ts';
import { describeValue, hasErrorCode, isTroupeError, UserError } from '../errors.ts';
import { printable } from '../run-dir/format.ts';
import { COMMAND_HELP } from './commands.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import type { CliIO } from './shared/io.ts';

interface ListFlags {
  readonly json?: boolean;
  readonly cwd?: string;
}

interface ShowFlags extends ListFlags {
  readonly kind?: string;
}

const KINDS: Readonly<Record<string, BlockKind>> = {
  prompt: 'prompt',
  settings: 'settings',
  'model-settings': 'modelSettings',
};

/** Registers `troupe blocks` and its subcommands on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const blocks = program.command('blocks').description(COMMAND_HELP.blocks.description);

  blocks
    .command('list')
    .description('List the blocks visible from a directory, with their versions, highest first.')
    .option('--json', 'print a JSON array')
    .option('--cwd <dir>', 'directory to look from (default: the current directory)', existingDirectory)
    .action(async (flags: ListFlags) => {
      const cwd = resolve(flags.cwd ?? process.cwd());
      const found = await discoverBlocks({ cwd });
      for (const problem of found.problems)
        io.stderr(`${printable(formatProblem(problem, shown(problem.file, cwd)))}\n`);
      if (flags.json) {
        io.stdout(`${JSON.stringify(found.blocks.map(listEntry), null, 2)}\n`);
        return;
      }
      io.stdout(
        listTable(
          found.blocks,
          cwd,
          found.dirs.map((dir) => dir.dir),
        ),
      );
    });

  blocks
    .command('show')
    .description(
      'Show one version of a block (the highest, or the highest in RANGE) and its content hash. ' +
        'Exits 1 when the block cannot be found or read.',
    )
    .argument('<id>', 'block id, e.g. acme.intake')
    .argument('[range]', 'a version or semver range (default: the highest version)')
    .option(
      '--kind <kind>',
      'prompt, settings or model-settings (default: prompt when it has .md versions, else settings)',
    )
    .option('--json', 'print JSON')
    .option('--cwd <dir>', 'directory to look from (default: the current directory)', existingDirectory)
    .action(async (id: string, range: string | undefined, flags: ShowFlags) => {
      const cwd = resolve(flags.cwd ?? process.cwd());
      if (!isBlockId(id)) {
        throw new UserError(
          'invalid_block_id',
          `Expected a block id such as \`acme.intake\`, got ${describeValue(id)}`,
          { id },
        );
      }
      if (range !== undefined && !isVersionRange(range)) {
        throw new UserError(
          'invalid_version_range',
          `Expected a version or semver range such as \`^1.2.0\`, got ${describeValue(range)}`,
          { range },
        );
      }
      const found = await discoverBlocks({ cwd });
      const kind = kindOf(flags.kind, id, found.blocks);
      const format = kind === 'prompt' ? 'md' : 'yaml';
      const entry = found.blocks.find((block) => block.id === id && block.format === format);
      const versions = entry?.versions.map((candidate) => candidate.version) ?? [];
      const version = highestSatisfying(versions, range ?? '*');
      const file = entry?.versions.find((candidate) => candidate.version === version)?.path;
      if (entry === undefined || version === undefined || file === undefined) {
        const why =
          versions.length === 0
            ? `found none (searched ${found.dirs.map((dir) => dir.dir).join(', ')})`
            : `found only ${versions.join(', ')}`;
        throw new UserError(
          'block_unresolvable',
          `Expected ${kind} block \`${id}\`${range === undefined ? '' : ` satisfying \`${range}\``}, ${why}`,
          { id, kind, versions },
        );
      }
      try {
        const block = await readBlockFile(file, kind, id, version);
        for (const problem of block.warnings ?? [])
          io.stderr(`${printable(formatProblem(problem, shown(problem.file, cwd)))}\n`);
        const hash = blockHash(block);
        if (flags.json) {
          io.stdout(
            `${JSON.stringify({ ...block, hash, path: file, versions, shadows: entry.shadows }, null, 2)}\n`,
          );
          return;
        }
        const header = [
          `# ${id} ${version} (${kind}) ${shown(file, cwd)}`,
          `# versions: ${versions.join(', ')}`,
          `# sha256: ${hash}`,
          ...entry.shadows.map((dir) => `# shadows: ${shown(dir, cwd)}`),
        ];
        io.stdout(`${header.join('\n')}\n${printable(readFileSync(file, 'utf8'))}`);
      } catch (error) {
        if (!(hasErrorCode(error, 'invalid_block') && isTroupeError(error))) throw error;
        const problems = (error.fields.problems ?? []) as DefinitionProblem[];
        for (const problem of problems)
          io.stderr(`${printable(formatProblem(problem, shown(problem.file, cwd)))}\n`);
        io.stderr(`troupe: invalid_block: ${id} ${version} has ${problems.length} error(s)\n`);
        setExit(1);
      }
    });
}

/** The kind `--kind` names, or the one the id's files suggest. */
function kindOf(flag: string | undefined, id: string, found: readonly DiscoveredBlock[]): BlockKind {
  if (flag !== undefined) {
    const kind = KINDS[flag];
    if (kind === undefined) {
      throw new UserError(
        'invalid_option',
        `Expected \`--kind\` to be prompt, settings or model-settings, got ${describeValue(flag)}`,
        {
          option: 'kind',
        },
      );
    }
    return kind;
  }
  return found.some((block) => block.id === id && block.format === 'md') ? 'prompt' : 'settings';
}

function listEntry(block: DiscoveredBlock) {
  return {
    id: block.id,
    kind: block.format === 'md' ? 'prompt' : 'settings',
    source: block.source,
    dir: block.dir,
    versions: block.versions,
    shadows: block.shadows,
  };
}

/** A path relative to `cwd` when it is inside it, absolute otherwise. */
function shown(path: string, cwd: string): string {
  const inside = relative(cwd, path);
  return inside === '' || inside.startsWith('..') || resolve(cwd, inside) !== path ? path : inside;
}

function listTable(blocks: readonly DiscoveredBlock[], cwd: string, dirs: readonly string[]): string {
  if (blocks.length === 0) return `No blocks found (searched ${dirs.join(', ')}).\n`;
  const rows = [
    ['ID', 'KIND', 'SOURCE', 'VERSIONS', 'DIR'],
    ...blocks.map((block) => [
      block.id,
      // A .yaml block is read as settings or as model settings by the reference that names it.
      block.format === 'md' ? 'prompt' : 'settings',
      block.source,
      block.versions.map((entry) => entry.version).join(', '),
      shown(block.dir, cwd),
    ]),
  ];
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  const lines = rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
  for (const block of blocks) {
    for (const dir of block.shadows)
      lines.push(`(${block.id} in ${shown(dir, cwd)} is shadowed by ${shown(block.dir, cwd)})`);
  }
  return `${lines.join('\n')}\n`;
}
