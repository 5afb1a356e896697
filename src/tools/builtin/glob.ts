/** `glob`: find files by name pattern (`src/**\/*.ts`), newest first. */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type picomatchFunction from 'picomatch';
import { UserError } from '../../errors.ts';
import { lazyPackage } from '../../require-package.ts';
import { confinePath } from '../confine.ts';
import { GLOB_MAX_VISITED, GLOB_RESULT_LIMIT } from '../constants.ts';
import type { Tool } from '../types.ts';
import { skipUnreadable, type Unreadable, unreadableNote, walkFiles } from './walk.ts';

// Loaded by the first glob (src/require-package.ts).
const picomatch = lazyPackage<typeof picomatchFunction>('picomatch');

type GlobArgs = {
  readonly pattern: string;
  readonly path?: string;
};

/** Finds files below a directory of the working directory (Claude Code's `Glob`). */
export const globTool: Tool<GlobArgs> = {
  name: 'glob',
  description:
    'Find files by glob pattern, e.g. `**/*.ts` or `src/**/test_*.py` (`**` crosses directories, ' +
    '`*` does not; a pattern without `/` matches file names at any depth). Returns paths relative ' +
    `to the working directory, most recently modified first, at most ${GLOB_RESULT_LIMIT}. Skips ` +
    'node_modules, .git and symbolic links.',
  parameters: {
    type: 'object',
    properties: {
      pattern: { type: 'string', minLength: 1, description: 'Glob pattern, relative to `path`.' },
      path: {
        type: 'string',
        description: 'Directory to search, relative to the working directory. Defaults to it.',
      },
    },
    required: ['pattern'],
    additionalProperties: false,
  },
  readOnly: true,
  async execute(args, ctx) {
    const requested = args.path ?? '.';
    const dir = await confinePath(ctx.cwd, requested);
    if (!dir.exists) throw new UserError('not_found', `Directory \`${requested}\` does not exist`);
    if (!(await stat(dir.absolute)).isDirectory()) {
      throw new UserError('not_a_directory', `\`${requested}\` is a file, not a directory to search`);
    }
    const pattern = args.pattern.replace(/^\.\//, '');
    const matches = picomatch()(pattern, { dot: true, basename: !pattern.includes('/') });
    const found: { file: string; mtimeMs: number }[] = [];
    let visited = 0;
    let cut = false;
    const unreadable: Unreadable = { paths: [], count: 0 };
    for await (const file of walkFiles(dir.absolute, ctx.signal, ctx.guard, unreadable)) {
      visited += 1;
      if (visited > GLOB_MAX_VISITED) {
        cut = true;
        break;
      }
      const below = path.relative(dir.absolute, file).split(path.sep).join('/');
      if (!matches(below)) continue;
      try {
        found.push({ file, mtimeMs: (await stat(file)).mtimeMs });
      } catch (error) {
        skipUnreadable(error, file, unreadable);
      }
    }
    const skipped = unreadableNote(unreadable, dir.root);
    if (found.length === 0) {
      const where = dir.relative === '.' ? 'the working directory' : dir.relative;
      return {
        ok: true,
        text: `No files match \`${args.pattern}\` in ${where}.${skipped ? `\n${skipped}` : ''}`,
      };
    }
    found.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.file < b.file ? -1 : 1));
    const shown = found
      .slice(0, GLOB_RESULT_LIMIT)
      .map(({ file }) => path.relative(dir.root, file).split(path.sep).join('/'));
    const notes = [
      ...(found.length > shown.length
        ? [`[${found.length - shown.length} more matches not shown; narrow the pattern or path]`]
        : []),
      ...(cut ? [`[Stopped after looking at ${GLOB_MAX_VISITED} files; search a smaller directory]`] : []),
      ...(skipped ? [skipped] : []),
    ];
    return { ok: true, text: [...shown, ...notes].join('\n') };
  },
};
