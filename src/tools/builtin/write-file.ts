/** `write_file`: write a whole file, creating it (and its directories) or replacing its content. */
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../../errors.ts';
import { confinePath } from '../confine.ts';
import type { Tool } from '../types.ts';

type WriteFileArgs = {
  readonly path: string;
  readonly content: string;
};

/** Writes a file inside the working directory (Claude Code's `Write`). */
export const writeFileTool: Tool<WriteFileArgs> = {
  name: 'write_file',
  description:
    'Write a file in the working directory: creates it (and missing directories) or replaces its ' +
    'whole content. Read an existing file first; to change part of a file, prefer search_replace.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', minLength: 1, description: 'File path, relative to the working directory.' },
      content: { type: 'string', description: 'The complete new content of the file.' },
    },
    required: ['path', 'content'],
    additionalProperties: false,
  },
  readOnly: false,
  async execute(args, ctx) {
    const file = await confinePath(ctx.cwd, args.path);
    if (file.exists) {
      const info = await stat(file.absolute);
      if (info.isDirectory()) throw new UserError('not_a_file', `\`${args.path}\` is a directory`);
      // A FIFO's open for writing waits for a reader in a libuv pool thread no signal reaches.
      if (!info.isFile()) {
        throw new UserError(
          'not_a_file',
          `\`${args.path}\` is not a regular file (a FIFO, socket or device)`,
        );
      }
    }
    await mkdir(path.dirname(file.absolute), { recursive: true });
    await writeFile(file.absolute, args.content, { signal: ctx.signal });
    const bytes = Buffer.byteLength(args.content);
    return {
      ok: true,
      text: `${file.exists ? 'Replaced the content of' : 'Created'} ${file.relative} (${bytes} bytes).`,
    };
  },
};
