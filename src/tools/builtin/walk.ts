/** Depth-first walks of a directory for the file tools: bounded, no symlinks, skipped dirs left out. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { GREP_SKIPPED_DIRS, WALK_SKIPPED_PATHS } from '../constants.ts';
import type { ToolGuard } from '../types.ts';

/** What a walk (and the tool around it) could not read; it goes on without it. */
export interface Unreadable {
  /** Paths that could not be read, first ones only (UNREADABLE_SHOWN); `count` has them all. */
  readonly paths: string[];
  count: number;
}

/** Unreadable paths named in a tool's note; the rest are counted. */
const UNREADABLE_SHOWN = 3;

/** Records `file` as unreadable when `error` says it cannot be read or is gone; rethrows others. */
export function skipUnreadable(error: unknown, file: string, unreadable: Unreadable): void {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'EACCES' && code !== 'EPERM' && code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  unreadable.count += 1;
  if (unreadable.paths.length < UNREADABLE_SHOWN) unreadable.paths.push(file);
}

/** A tool's note on what it skipped (paths relative to `root`), or '' when nothing was. */
export function unreadableNote(unreadable: Unreadable, root: string): string {
  if (unreadable.count === 0) return '';
  const shown = unreadable.paths.map((file) => `\`${path.relative(root, file).split(path.sep).join('/')}\``);
  const more = unreadable.count > shown.length ? ` and ${unreadable.count - shown.length} more` : '';
  return `[Skipped what could not be read (no permission, or gone): ${shown.join(', ')}${more}]`;
}

/**
 * Regular files below `dir`, depth first in name order. Symlinks are never followed; `node_modules`,
 * `.git` and troupe's run output (`.troupe/runs`) are not entered; entries the agent's rules refuse (`guard.path`) are left out, and so
 * is everything below a refused directory. A directory below `dir` that cannot be read (no
 * permission, or removed meanwhile) is left out and recorded in `unreadable`.
 */
export async function* walkFiles(
  dir: string,
  signal: AbortSignal,
  guard: ToolGuard | undefined,
  unreadable: Unreadable = { paths: [], count: 0 },
): AsyncGenerator<string> {
  signal.throwIfAborted();
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (guard?.path?.(full) !== undefined) continue;
    if (entry.isDirectory()) {
      if (skippedDir(dir, entry.name)) continue;
      const below = walkFiles(full, signal, guard, unreadable);
      for (;;) {
        let next: IteratorResult<string>;
        try {
          next = await below.next();
        } catch (error) {
          // Only this directory's own listing fails here: its subdirectories catch their own.
          skipUnreadable(error, full, unreadable);
          break;
        }
        if (next.done) break;
        yield next.value;
      }
    } else if (entry.isFile()) {
      yield full;
    }
  }
}

function skippedDir(parent: string, name: string): boolean {
  if (GREP_SKIPPED_DIRS.has(name)) return true;
  const parentName = path.basename(parent);
  return WALK_SKIPPED_PATHS.some(
    ([skippedParent, skippedName]) => parentName === skippedParent && name === skippedName,
  );
}
