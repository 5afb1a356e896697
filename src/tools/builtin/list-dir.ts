/** `list_dir`: the entries of one directory. */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../../errors.ts';
import { confinePath } from '../confine.ts';
import { LIST_DIR_ENTRY_LIMIT } from '../constants.ts';
import type { Tool } from '../types.ts';

type ListDirArgs = {
  readonly path?: string;
};

/** Lists a directory inside the working directory (not recursive). */
export const listDirTool: Tool<ListDirArgs> = {
  name: 'list_dir',
  description:
    'List the entries of a directory in the working directory, sorted by name. Directories end ' +
    'with `/`, symbolic links with `@`. Not recursive.',
  parameters: {
    type: 'object',
    properties: {
      path: {
        type: 'string',
        description: 'Directory path, relative to the working directory. Defaults to the working directory.',
      },
    },
    additionalProperties: false,
  },
  readOnly: true,
  async execute(args, ctx) {
    const requested = args.path ?? '.';
    const dir = await confinePath(ctx.cwd, requested);
    if (!dir.exists) throw new UserError('not_found', `Directory \`${requested}\` does not exist`);
    if (!(await stat(dir.absolute)).isDirectory()) {
      throw new UserError('not_a_directory', `\`${requested}\` is a file; use read_file to read it`);
    }
    const entries = (await readdir(dir.absolute, { withFileTypes: true }))
      // Entries the agent's rules refuse (`Read(./secrets/**)` in disallowedTools) are not shown.
      .filter((entry) => ctx.guard?.path?.(path.join(dir.absolute, entry.name)) === undefined)
      .map((entry) => entry.name + (entry.isDirectory() ? '/' : entry.isSymbolicLink() ? '@' : ''))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (entries.length === 0) return { ok: true, text: `${dir.relative} is empty.` };
    const shown = entries.slice(0, LIST_DIR_ENTRY_LIMIT);
    const more =
      entries.length > shown.length ? `\n[${entries.length - shown.length} more entries not shown]` : '';
    return { ok: true, text: `${dir.relative} (${entries.length} entries):\n${shown.join('\n')}${more}` };
  },
};
