/** Depth-first walks of a directory for the file tools: bounded, no symlinks, skipped dirs left out. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { GREP_SKIPPED_DIRS, WALK_SKIPPED_PATHS } from '../constants.ts';
import type { ToolGuard } from '../types.ts';

/**
 * Regular files below `dir`, depth first in name order. Symlinks are never followed; `node_modules`,
 * `.git` and troupe's run output (`.troupe/runs`) are not entered; entries the agent's rules refuse (`guard.path`) are left out, and so
 * is everything below a refused directory.
 */
export async function* walkFiles(
  dir: string,
  signal: AbortSignal,
  guard: ToolGuard | undefined,
): AsyncGenerator<string> {
  signal.throwIfAborted();
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (guard?.path?.(full) !== undefined) continue;
    if (entry.isDirectory()) {
      if (!skippedDir(dir, entry.name)) yield* walkFiles(full, signal, guard);
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
