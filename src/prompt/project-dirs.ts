/** The directories of the project walk: from the git root down to the working directory. */
import { existsSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from '../tools/confine.ts';

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

/** Files already warned about by {@link projectFileTarget}: once per file and process. */
const warnedLinks = new Set<string>();

/**
 * The real path of `file` (symlinks resolved) when it lies inside `root` (resolved too), for a
 * project file whose text goes to the model (an AGENTS.md, a project's SKILL.md). One that links
 * outside is undefined, with a process warning (`code`, once per file): a cloned repository must
 * not be able to send `~/.ssh/id_rsa` to the model by linking it. Throws what `realpath` throws
 * (the file is missing).
 */
export async function projectFileTarget(
  file: string,
  root: string,
  warning: { readonly what: string; readonly code: string },
): Promise<string | undefined> {
  const target = await realpath(file);
  if (isInside(await realpath(root), target)) return target;
  if (!warnedLinks.has(file)) {
    warnedLinks.add(file);
    process.emitWarning(
      `Skipped ${warning.what} ${file}: it links to ${target}, outside the project ${root}; its text is not sent to the model`,
      { type: 'TroupeWarning', code: warning.code },
    );
  }
  return undefined;
}
