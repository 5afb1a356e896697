/** `search_replace`: replace one exact, unique piece of a file, or create a new file. */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../../errors.ts';
import { confinePath } from '../confine.ts';
import type { Tool } from '../types.ts';

type SearchReplaceArgs = {
  readonly path: string;
  readonly old_string: string;
  readonly new_string: string;
};

/** Edits a file inside the working directory by exact, unique match. */
export const searchReplaceTool: Tool<SearchReplaceArgs> = {
  name: 'search_replace',
  description:
    'Replace text in a file in the working directory. old_string must match the file exactly ' +
    '(whitespace and indentation included) and exactly once; include enough surrounding lines to ' +
    'make it unique. To create a new file, give an empty old_string and the whole content as new_string.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'File path, relative to the working directory.' },
      old_string: { type: 'string', description: 'The exact text to replace; empty to create a new file.' },
      new_string: { type: 'string', description: 'The replacement text.' },
    },
    required: ['path', 'old_string', 'new_string'],
    additionalProperties: false,
  },
  readOnly: false,
  async execute(args, ctx) {
    const file = await confinePath(ctx.cwd, args.path);
    if (args.old_string === '') {
      if (file.exists) {
        throw new UserError(
          'file_exists',
          `\`${args.path}\` already exists; give the text to replace as old_string`,
        );
      }
      await mkdir(path.dirname(file.absolute), { recursive: true });
      await writeFile(file.absolute, args.new_string, { flag: 'wx', signal: ctx.signal });
      return { ok: true, text: `Created ${file.relative}.` };
    }
    if (!file.exists) {
      throw new UserError(
        'not_found',
        `File \`${args.path}\` does not exist (to create it, give an empty old_string)`,
      );
    }
    const info = await stat(file.absolute);
    if (info.isDirectory()) throw new UserError('not_a_file', `\`${args.path}\` is a directory`);
    // A FIFO's open waits for the other end in a libuv pool thread no signal reaches.
    if (!info.isFile()) {
      throw new UserError('not_a_file', `\`${args.path}\` is not a regular file (a FIFO, socket or device)`);
    }
    if (args.old_string === args.new_string) {
      throw new UserError('no_change', 'old_string and new_string are the same; nothing to change');
    }
    // Bytes, not a string: decoding and encoding again turned every byte that is not UTF-8 (a
    // Latin-1 letter, a binary file's data) into U+FFFD, all over the file, for one replacement.
    const content = await readFile(file.absolute, { signal: ctx.signal });
    const needle = Buffer.from(args.old_string, 'utf8');
    const count = countOccurrences(content, needle);
    if (count === 0) {
      throw new UserError(
        'no_match',
        `old_string was not found in \`${args.path}\`; it must match the file exactly, including whitespace and indentation`,
      );
    }
    if (count > 1) {
      throw new UserError(
        'ambiguous_match',
        `old_string occurs ${count} times in \`${args.path}\`; include more surrounding text so it matches exactly once`,
      );
    }
    const at = content.indexOf(needle);
    // Splicing rather than String.replace, which would expand `$&` and friends in new_string.
    const updated = Buffer.concat([
      content.subarray(0, at),
      Buffer.from(args.new_string, 'utf8'),
      content.subarray(at + needle.length),
    ]);
    await writeFile(file.absolute, updated, { signal: ctx.signal });
    return { ok: true, text: `Replaced 1 occurrence in ${file.relative}.` };
  },
};

/** Counts overlapping occurrences too: `aa` in `aaa` is ambiguous. */
function countOccurrences(haystack: Buffer, needle: Buffer): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    count += 1;
  }
  return count;
}
