/** `read_file`: a file's lines, numbered, optionally a range of them. */
import { readFile, stat } from 'node:fs/promises';
import { UserError } from '../../errors.ts';
import { confinePath } from '../confine.ts';
import { READ_FILE_MAX_FILE_BYTES, READ_FILE_OUTPUT_BYTE_LIMIT } from '../constants.ts';
import type { Tool } from '../types.ts';
import { isBinary, splitLines } from './text.ts';

type ReadFileArgs = {
  readonly path: string;
  readonly start_line?: number;
  readonly end_line?: number;
};

/** Reads a text file inside the working directory and numbers its lines. */
export const readFileTool: Tool<ReadFileArgs> = {
  name: 'read_file',
  description:
    'Read a text file in the working directory. Lines are numbered from 1 (the number and a tab ' +
    'precede each line; they are not part of the file). Give start_line and end_line (inclusive) ' +
    'to read part of a long file; a long read stops at a line and says how to continue.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'File path, relative to the working directory.' },
      start_line: { type: 'integer', minimum: 1, description: 'First line to read (1-based).' },
      end_line: { type: 'integer', minimum: 1, description: 'Last line to read (inclusive).' },
    },
    required: ['path'],
    additionalProperties: false,
  },
  readOnly: true,
  async execute(args, ctx) {
    const file = await confinePath(ctx.cwd, args.path);
    if (!file.exists) throw new UserError('not_found', `File \`${args.path}\` does not exist`);
    const info = await stat(file.absolute);
    if (info.isDirectory()) {
      throw new UserError('not_a_file', `\`${args.path}\` is a directory; use list_dir to see its entries`);
    }
    if (!info.isFile()) {
      // A FIFO, socket or device: opening a FIFO without a writer blocks a libuv pool thread for
      // good (no signal reaches it), and four of them stall every file operation of the process.
      throw new UserError('not_a_file', `\`${args.path}\` is not a regular file (a FIFO, socket or device)`);
    }
    if (info.size > READ_FILE_MAX_FILE_BYTES) {
      throw new UserError(
        'file_too_large',
        `\`${args.path}\` has ${info.size} bytes, more than read_file reads (${READ_FILE_MAX_FILE_BYTES}); search it with grep instead`,
      );
    }
    const bytes = await readFile(file.absolute, { signal: ctx.signal });
    if (isBinary(bytes)) throw new UserError('binary_file', `\`${args.path}\` is a binary file`);
    const lines = splitLines(bytes.toString('utf8'));
    if (lines.length === 0) return { ok: true, text: `${file.relative} is empty.` };

    const start = args.start_line ?? 1;
    const end = Math.min(args.end_line ?? lines.length, lines.length);
    if (start > lines.length) {
      throw new UserError(
        'invalid_range',
        `start_line ${start} is past the end of \`${args.path}\` (${lines.length} lines)`,
      );
    }
    if (end < start) throw new UserError('invalid_range', `end_line ${end} is before start_line ${start}`);

    const out: string[] = [];
    let bytesOut = 0;
    let last = start - 1;
    let cutLine = '';
    for (let n = start; n <= end; n += 1) {
      const numbered = `${String(n).padStart(6)}\t${lines[n - 1] ?? ''}`;
      bytesOut += Buffer.byteLength(numbered) + 1;
      if (bytesOut > READ_FILE_OUTPUT_BYTE_LIMIT && out.length > 0) break;
      if (bytesOut > READ_FILE_OUTPUT_BYTE_LIMIT) {
        // One line longer than the whole limit (minified code, a data blob): show its start only.
        out.push(cutToBytes(numbered, READ_FILE_OUTPUT_BYTE_LIMIT));
        cutLine = `\n[Line ${n} has ${Buffer.byteLength(numbered)} bytes; only its first ${READ_FILE_OUTPUT_BYTE_LIMIT} are shown. Search it with grep instead]`;
        last = n;
        break;
      }
      out.push(numbered);
      last = n;
    }
    const header = `${file.relative}: lines ${start}-${last} of ${lines.length}`;
    const footer =
      cutLine +
      (last < end
        ? `\n[Output stopped at line ${last} to stay under ${READ_FILE_OUTPUT_BYTE_LIMIT} bytes; read on with start_line=${last + 1}]`
        : '');
    return { ok: true, text: `${header}\n${out.join('\n')}${footer}` };
  },
};

/** The longest prefix of `text` of at most `limit` UTF-8 bytes that does not split a character. */
function cutToBytes(text: string, limit: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return text;
  let end = limit;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString('utf8');
}
