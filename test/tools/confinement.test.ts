import { chmod, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { confinePath } from '../../src/tools/confine.ts';
import type { Toolbox } from '../../src/tools/toolbox.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();
const SECRET = 'SECRET-CONTENT';

let root: string;
let cwd: string;
let toolbox: Toolbox;

beforeEach(async () => {
  root = await tempDir();
  cwd = path.join(root, 'work');
  await mkdir(path.join(root, 'outside'), { recursive: true });
  await mkdir(path.join(cwd, 'sub'), { recursive: true });
  await writeFile(path.join(root, 'outside', 'secret.txt'), `${SECRET}\n`);
  await writeFile(path.join(cwd, 'inside.txt'), 'inside line\n');
  await symlink('../outside/secret.txt', path.join(cwd, 'link-file'));
  await symlink('../outside', path.join(cwd, 'link-dir'));
  await symlink('../outside/missing.txt', path.join(cwd, 'dangling'));
  await symlink('inside.txt', path.join(cwd, 'ok-link'));
  toolbox = toolboxFor(cwd);
});

async function expectRefused(tool: string, args: Record<string, unknown>): Promise<void> {
  const result = await toolbox.call(tool, args);
  expect(result.ok, `${tool} ${JSON.stringify(args)}`).toBe(false);
  expect(result.text).toContain('cannot be used');
  expect(result.text).not.toContain(SECRET);
}

async function outsideUnchanged(): Promise<void> {
  expect(await readdir(path.join(root, 'outside'))).toEqual(['secret.txt']);
  expect(await readFile(path.join(root, 'outside', 'secret.txt'), 'utf8')).toBe(`${SECRET}\n`);
}

const escapes = () => ({
  dotdot: '../outside/secret.txt',
  nestedDotdot: 'sub/../../outside/secret.txt',
  absolute: path.join(root, 'outside', 'secret.txt'),
  fileSymlink: 'link-file',
  throughDirSymlink: 'link-dir/secret.txt',
});

describe('file tools stay inside the working directory', () => {
  it('read_file refuses `..`, absolute paths outside and symlinks out', async () => {
    for (const target of Object.values(escapes())) await expectRefused('read_file', { path: target });
    await expectRefused('read_file', { path: 'dangling' });
  });

  it('list_dir refuses `..`, absolute paths outside and symlinks out', async () => {
    for (const target of ['..', '../outside', path.join(root, 'outside'), 'link-dir', '/']) {
      await expectRefused('list_dir', { path: target });
    }
  });

  it('grep refuses paths outside and never follows a symlink out while walking', async () => {
    for (const target of [...Object.values(escapes()), '..', 'link-dir']) {
      await expectRefused('grep', { pattern: 'SECRET', path: target });
    }
    const walked = await toolbox.call('grep', { pattern: 'SECRET|inside' });
    expect(walked.ok).toBe(true);
    expect(walked.text).toBe('inside.txt:1: inside line');
  });

  it('search_replace refuses to edit or create anything outside, including through a dangling symlink', async () => {
    for (const target of Object.values(escapes())) {
      await expectRefused('search_replace', { path: target, old_string: SECRET, new_string: 'pwned' });
    }
    for (const target of ['../outside/new.txt', 'link-dir/new.txt', 'dangling', path.join(root, 'new.txt')]) {
      await expectRefused('search_replace', { path: target, old_string: '', new_string: 'pwned' });
    }
    await outsideUnchanged();
    expect(await readdir(root)).toEqual(['outside', 'work']);
  });

  it('refuses a symlink loop and a directory it may not read with `cannot be used`, saying why', async () => {
    await symlink('loop-b', path.join(cwd, 'loop-a'));
    await symlink('loop-a', path.join(cwd, 'loop-b'));
    for (const [tool, args] of [
      ['read_file', { path: 'loop-a' }],
      ['list_dir', { path: 'loop-a/sub' }],
      ['write_file', { path: 'loop-b', content: 'x' }],
    ] as const) {
      expect(await toolbox.call(tool, args), tool).toMatchObject({
        ok: false,
        text: expect.stringContaining('Path `'),
      });
      expect((await toolbox.call(tool, args)).text, tool).toMatch(
        /cannot be used: it is a symlink loop \(or a chain of too many symlinks\)$/,
      );
    }
    await expect(confinePath(cwd, 'loop-a')).rejects.toMatchObject({
      code: 'path_unusable',
      fields: { path: 'loop-a', errno: 'ELOOP' },
    });
    // Root reads every directory: the permission case is checked only when the tests run as a user.
    if (process.getuid?.() !== 0) {
      await mkdir(path.join(cwd, 'locked'));
      await writeFile(path.join(cwd, 'locked', 'in.txt'), 'x');
      await chmod(path.join(cwd, 'locked'), 0o000);
      try {
        expect((await toolbox.call('read_file', { path: 'locked/in.txt' })).text).toMatch(
          /Path `locked\/in\.txt` cannot be used: a directory on the way cannot be read \(no permission\)$/,
        );
      } finally {
        await chmod(path.join(cwd, 'locked'), 0o755);
      }
    }
  });

  it('accepts absolute paths inside, `..` that stays inside, and symlinks that stay inside', async () => {
    for (const target of [path.join(cwd, 'inside.txt'), 'sub/../inside.txt', 'ok-link']) {
      const result = await toolbox.call('read_file', { path: target });
      expect(result.ok).toBe(true);
      expect(result.text).toContain('     1\tinside line');
    }
    expect((await toolbox.call('list_dir', { path: cwd })).ok).toBe(true);
    expect(
      (await toolbox.call('search_replace', { path: 'sub/../sub/new.txt', old_string: '', new_string: 'x' }))
        .ok,
    ).toBe(true);
    expect(await readFile(path.join(cwd, 'sub', 'new.txt'), 'utf8')).toBe('x');
  });
});
