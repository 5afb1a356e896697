/** Expanding the paths given to `troupe agents validate` into definition files. */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';

/** A file to validate: how the user wrote it, and where it is. */
export interface DefinitionFile {
  /** The given path, or the given directory joined with the file's path inside it. */
  readonly display: string;
  readonly absolute: string;
}

/** A given path that could not be read. */
export interface UnreadablePath {
  readonly display: string;
  readonly absolute: string;
  readonly reason: string;
}

/** Directory names never descended into. */
const SKIPPED_DIRS = new Set(['node_modules', '.git']);

/**
 * The files named by `paths`: files as given (whatever their extension), directories searched
 * recursively for `*.md`, each directory's entries in sorted order.
 * @param cwd resolves relative paths. @default process.cwd()
 */
export async function collectDefinitionFiles(
  paths: readonly string[],
  cwd: string = process.cwd(),
): Promise<{ files: DefinitionFile[]; unreadable: UnreadablePath[] }> {
  const files: DefinitionFile[] = [];
  const unreadable: UnreadablePath[] = [];
  for (const given of paths) {
    const absolute = resolve(cwd, given);
    try {
      const info = await stat(absolute);
      if (info.isDirectory()) await walk(given, absolute, files);
      else files.push({ display: given, absolute });
    } catch (error) {
      unreadable.push({
        display: given,
        absolute,
        reason: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { files, unreadable };
}

async function walk(display: string, absolute: string, files: DefinitionFile[]): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(absolute, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const child = { display: join(display, entry.name), absolute: join(absolute, entry.name) };
    if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name))
      await walk(child.display, child.absolute, files);
    else if ((entry.isFile() || entry.isSymbolicLink()) && entry.name.endsWith('.md')) files.push(child);
  }
}

/** True when `file` lies inside a `.claude/agents` directory (at any depth): a Claude Code file. */
export function isClaudeAgentsFile(file: string): boolean {
  const parts = resolve(file).split(sep);
  for (let index = 0; index < parts.length - 2; index++) {
    if (parts[index] === '.claude' && parts[index + 1] === 'agents') return true;
  }
  return false;
}
