import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeDirectories } from '../../src/journal/make-directories.ts';

const probe = fileURLToPath(new URL('../fixtures/journal/open-under-proc.ts', import.meta.url));

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-mkdirs-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('makeDirectories', () => {
  it('makes the missing levels and returns the first one made, as mkdir -p does', () => {
    const deep = path.join(dir, 'a', 'b', 'c');
    expect(makeDirectories(deep)).toBe(path.join(dir, 'a'));
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(makeDirectories(deep)).toBeUndefined();
  });

  it('refuses a path under a file with ENOTDIR, making nothing', () => {
    const file = path.join(dir, 'plain.txt');
    writeFileSync(file, 'x');
    expect(() => makeDirectories(path.join(file, 'sub', 'deeper'))).toThrow(
      expect.objectContaining({ code: 'ENOTDIR' }),
    );
    expect(existsSync(path.join(dir, 'sub'))).toBe(false);
  });

  it.runIf(process.platform === 'linux' && existsSync('/proc/self'))(
    'a journal or run directory under /proc fails as journal_io / run_dir_io instead of hanging',
    () => {
      // Node 20's mkdirSync(..., { recursive: true }) never returns there. The child is killed
      // after a minute (a bound, not a measurement: it answers at once when it does not hang).
      const child = spawnSync(process.execPath, ['--import', 'tsx', probe], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(child.signal, 'the child hung and was killed').toBeNull();
      expect(child.status, child.stderr).toBe(0);
      expect(JSON.parse(child.stdout)).toEqual(['journal_io', 'run_dir_io']);
    },
  );
});
