/** The AGENTS.md section: project instructions from the git root down to the working directory. */
import path from 'node:path';
import { readFilePrefix } from '../bounded-read.ts';
import { AGENTS_MD_BYTE_LIMIT } from '../constants.ts';
import { projectDirs, projectFileTarget } from './project-dirs.ts';

/** Options of {@link collectAgentsMd} (and of `assembleSystemPrompt`'s AGENTS.md section). */
export interface AgentsMdOptions {
  /** Bytes of one AGENTS.md shown before it is cut. @default AGENTS_MD_BYTE_LIMIT */
  readonly byteLimit?: number;
}

/** One AGENTS.md as it goes into the prompt. */
export interface AgentsMdFile {
  /** Absolute path of the file. */
  readonly path: string;
  /** Its content, cut at the byte limit (on a character boundary). */
  readonly text: string;
  /** The file's full size in bytes, when `text` was cut (only the bytes shown, and one more, are read). */
  readonly truncatedFrom?: number;
}

/** `process.emitWarning` code of an AGENTS.md skipped because it resolves outside the project. */
export const AGENTS_MD_OUTSIDE_WARNING_CODE = 'TROUPE_AGENTS_MD_OUTSIDE';

const OUTSIDE_WARNING = { what: 'AGENTS.md', code: AGENTS_MD_OUTSIDE_WARNING_CODE } as const;

/**
 * Reads the AGENTS.md files from the git root down to `cwd`, outermost first. One that resolves
 * (through a symlink) outside the project (the git root, or `cwd` without one) is skipped with a
 * process warning ({@link AGENTS_MD_OUTSIDE_WARNING_CODE}, once per file): a cloned repository
 * must not be able to send `~/.ssh/id_rsa` to the model by linking it.
 */
export async function collectAgentsMd(cwd: string, options: AgentsMdOptions = {}): Promise<AgentsMdFile[]> {
  const limit = options.byteLimit ?? AGENTS_MD_BYTE_LIMIT;
  const files: AgentsMdFile[] = [];
  const dirs = await projectDirs(cwd);
  const root = dirs[0] ?? path.resolve(cwd);
  for (const dir of dirs) {
    const file = path.join(dir, 'AGENTS.md');
    let bytes: Buffer;
    let size: number;
    try {
      const target = await projectFileTarget(file, root, OUTSIDE_WARNING);
      if (target === undefined) continue;
      // Only what is shown is read (and one byte more, to know it is cut): a 2 GB AGENTS.md was
      // read whole to keep 32 KiB of it. The size in the cut notice is the handle's.
      const read = await readFilePrefix(target, limit + 1);
      if (read.kind !== 'file') continue; // a directory, a FIFO: nothing to add
      bytes = read.bytes;
      size = read.size;
    } catch {
      continue; // absent (or unreadable): nothing to add
    }
    if (bytes.length <= limit) {
      files.push({ path: file, text: bytes.toString('utf8') });
    } else {
      files.push({
        path: file,
        text: bytes.subarray(0, utf8Boundary(bytes, limit)).toString('utf8'),
        truncatedFrom: size,
      });
    }
  }
  return files;
}

/** The largest cut at or below `limit` that does not split a UTF-8 character. */
function utf8Boundary(bytes: Buffer, limit: number): number {
  let cut = limit;
  // Continuation bytes are 10xxxxxx: back up to the first byte of the character at the cut.
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut -= 1;
  return cut;
}

/** The prompt section for `files`, or `''` when there are none. */
export function renderAgentsMdSection(files: readonly AgentsMdFile[]): string {
  if (files.length === 0) return '';
  const blocks = files.map((file) => {
    const note =
      file.truncatedFrom === undefined
        ? ''
        : `\n[Truncated: this AGENTS.md has ${file.truncatedFrom} bytes; only the first ${Buffer.byteLength(file.text)} are shown]`;
    return `<agents_md path="${file.path}">\n${file.text.replace(/\s+$/, '')}${note}\n</agents_md>`;
  });
  return [
    '# Project instructions (AGENTS.md)',
    'These AGENTS.md files apply to the working directory, outermost first; where they disagree, ' +
      'the one closer to the working directory wins.',
    ...blocks,
  ].join('\n\n');
}
