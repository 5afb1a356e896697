/** The directories of the project walk: from the git root down to the working directory. */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Directories from the git root (the nearest ancestor of `cwd` holding `.git`, a directory or a
 * worktree's file) down to `cwd`, outermost first. Without a git root, only `cwd`.
 */
export async function projectDirs(cwd: string): Promise<string[]> {
  const dirs: string[] = [];
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    dirs.unshift(dir);
    if (await exists(path.join(dir, '.git'))) return dirs;
    if (path.dirname(dir) === dir) return [path.resolve(cwd)];
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/** The git root above `cwd` (as {@link projectDirs} finds it), or `cwd` when there is none; synchronous. */
export function projectRootSync(cwd: string): string {
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, '.git'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(cwd);
  }
}
