/** `mkdir -p` one level at a time, for the journal's directory and a run directory. */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Creates `dir` and the directories missing above it, one `mkdir` each, and returns the first
 * one it created (undefined when `dir` existed), as `mkdirSync(dir, { recursive: true })` does.
 * Not that call: on Node 20 it never returns under `/proc` (where `mkdir` fails ENOENT although
 * the parent exists, and it retries for ever), so `--journal /proc/x/y.jsonl` hung, Ctrl-C
 * and all. Here each level is tried once: at most one `mkdir` per component of the path. Throws
 * the file system's error (ENOENT, ENOTDIR, EACCES...) for the caller to type.
 */
export function makeDirectories(dir: string): string | undefined {
  const missing: string[] = [];
  for (let current = resolve(dir); ; current = dirname(current)) {
    const found = statSync(current, { throwIfNoEntry: false });
    if (found !== undefined) {
      if (!found.isDirectory()) throw notDirectory(current);
      break;
    }
    missing.push(current);
    if (dirname(current) === current) break;
  }
  missing.reverse();
  for (const level of missing) {
    try {
      mkdirSync(level);
    } catch (error) {
      // Made by someone else in the meantime: as good as made here.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(level).isDirectory()) throw error;
    }
  }
  return missing[0];
}

function notDirectory(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), {
    code: 'ENOTDIR',
    path,
  });
}
