/**
 * The `--cwd <dir>` option's parser, shared by every command that takes one.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';

/**
 * `value` when it names a directory that exists; else commander's InvalidArgumentError, so the
 * command exits 1 before it runs (a mistyped `--cwd` used to be created, run directory and all).
 */
export function existingDirectory(value: string): string {
  let kind: 'directory' | 'file' | undefined;
  try {
    kind = statSync(resolve(value)).isDirectory() ? 'directory' : 'file';
  } catch {
    kind = undefined;
  }
  if (kind !== 'directory') {
    throw new InvalidArgumentError(
      `Expected an existing directory, got ${JSON.stringify(value)}${kind === 'file' ? ' (a file)' : ' (not found)'}.`,
    );
  }
  return value;
}
