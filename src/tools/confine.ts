/**
 * Confinement of file tools to the working directory. Paths are compared after resolving symlinks
 * on both sides, so neither `..`, an absolute path, nor a symlink can reach outside.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../errors.ts';

/** A path the tools may use. */
export interface ConfinedPath {
  /** Absolute path with symlinks resolved (as far as the path exists). */
  readonly absolute: string;
  /** The same path relative to the working directory, `.` for the directory itself. */
  readonly relative: string;
  /** The working directory with symlinks resolved. */
  readonly root: string;
  /** Whether something exists at the path. */
  readonly exists: boolean;
}

/**
 * Resolves `requested` (relative to `cwd`, or absolute) to a path inside `cwd`. Throws UserError
 * `path_outside_cwd` (fields: `path`, `cwd`) when the path, or any symlink along it, leads outside,
 * and for dangling symlinks, whose target cannot be checked; `path_unusable` (fields: `path`,
 * `errno`) when it cannot be resolved at all: a symlink loop, a directory without permission, a
 * name too long.
 */
export async function confinePath(cwd: string, requested: string): Promise<ConfinedPath> {
  const root = await realpath(cwd);
  const resolved = path.resolve(cwd, requested);
  let existing = resolved;
  const missing: string[] = [];
  let real: string | undefined;
  for (;;) {
    try {
      real = await realpath(existing);
      break;
    } catch (error) {
      if (!isNotFound(error)) throw unusable(requested, error);
      if (await isPresent(existing)) {
        throw outside(requested, cwd, 'it is a symlink whose target does not exist');
      }
      const parent = path.dirname(existing);
      if (parent === existing) break;
      missing.unshift(path.basename(existing));
      existing = parent;
    }
  }
  if (real === undefined) throw outside(requested, cwd, 'no part of it exists');
  const absolute = path.join(real, ...missing);
  if (!isInside(root, absolute)) throw outside(requested, cwd);
  return {
    absolute,
    relative: path.relative(root, absolute) || '.',
    root,
    exists: missing.length === 0,
  };
}

/** True when `candidate` is `root` or below it (both absolute and normalised). */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === '' ||
    !(relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
  );
}

function outside(requested: string, cwd: string, why = 'it is outside the working directory'): UserError {
  return new UserError(
    'path_outside_cwd',
    `Path \`${requested}\` cannot be used: ${why}. Only paths inside \`${cwd}\` can be used`,
    { path: requested, cwd },
  );
}

/** Why the system could not resolve a path, said for the model; other errors as they are. */
const UNUSABLE: Readonly<Record<string, string>> = {
  ELOOP: 'it is a symlink loop (or a chain of too many symlinks)',
  EACCES: 'a directory on the way cannot be read (no permission)',
  EPERM: 'a directory on the way cannot be read (no permission)',
  ENAMETOOLONG: 'the name is too long',
};

function unusable(requested: string, error: unknown): unknown {
  const errno = (error as { code?: unknown } | null)?.code;
  const why = typeof errno === 'string' && Object.hasOwn(UNUSABLE, errno) ? UNUSABLE[errno] : undefined;
  if (why === undefined) return error;
  return new UserError('path_unusable', `Path \`${requested}\` cannot be used: ${why}`, {
    path: requested,
    errno,
  });
}

async function isPresent(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
