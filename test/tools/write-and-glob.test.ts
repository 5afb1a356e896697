import { rmSync } from 'node:fs';
import { chmod, mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { globTool } from '../../src/tools/builtin/glob.ts';
import { grepTool } from '../../src/tools/builtin/grep.ts';
import type { ToolContext } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

describe('write_file', () => {
  it('creates files with their directories and replaces whole contents, inside the working directory only', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd);
    expect((await toolbox.call('write_file', { path: 'a/b/c.txt', content: 'one' })).text).toBe(
      'Created a/b/c.txt (3 bytes).',
    );
    expect((await toolbox.call('write_file', { path: 'a/b/c.txt', content: 'two!' })).text).toBe(
      'Replaced the content of a/b/c.txt (4 bytes).',
    );
    expect(await readFile(path.join(cwd, 'a/b/c.txt'), 'utf8')).toBe('two!');
    const outside = await toolbox.call('write_file', { path: '../escape.txt', content: 'x' });
    expect(outside.ok).toBe(false);
    expect(outside.text).toContain('cannot be used');
    expect((await toolbox.call('write_file', { path: 'a', content: 'x' })).text).toContain('is a directory');
  });

  it('is what Claude Code`s Write admits, and Edit rules can narrow it', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, { tools: ['Write(src/**)'] });
    expect(toolbox.specs.map((spec) => spec.name)).toEqual(['write_file']);
    expect((await toolbox.call('write_file', { path: 'src/x.ts', content: '' })).ok).toBe(true);
    expect((await toolbox.call('write_file', { path: 'README.md', content: '' })).ok).toBe(false);
  });
});

describe('glob', () => {
  it('finds files with ** patterns, newest first, skipping node_modules', async () => {
    const cwd = await tempDir();
    await mkdir(path.join(cwd, 'src/deep'), { recursive: true });
    await mkdir(path.join(cwd, 'node_modules/pkg'), { recursive: true });
    await writeFile(path.join(cwd, 'src/old.ts'), '');
    await writeFile(path.join(cwd, 'src/deep/new.ts'), '');
    await writeFile(path.join(cwd, 'src/readme.md'), '');
    await writeFile(path.join(cwd, 'node_modules/pkg/index.ts'), '');
    await utimes(path.join(cwd, 'src/old.ts'), new Date(1000), new Date(1000));
    const toolbox = toolboxFor(cwd, { tools: ['Glob'] });
    expect((await toolbox.call('glob', { pattern: 'src/**/*.ts' })).text).toBe('src/deep/new.ts\nsrc/old.ts');
    expect((await toolbox.call('glob', { pattern: '*.ts' })).text).toBe('src/deep/new.ts\nsrc/old.ts');
    expect((await toolbox.call('glob', { pattern: '**/*.md', path: 'src' })).text).toBe('src/readme.md');
    expect((await toolbox.call('glob', { pattern: '*.py' })).text).toBe(
      'No files match `*.py` in the working directory.',
    );
  });
});

describe('glob and grep in a tree with parts they cannot read', () => {
  it('skip a directory that is gone or unreadable, say so, and still list the rest', async () => {
    const cwd = await tempDir();
    for (const dir of ['a', 'gone', 'locked', 'z']) await mkdir(path.join(cwd, dir));
    for (const dir of ['a', 'gone', 'locked', 'z']) await writeFile(path.join(cwd, dir, 'f.txt'), 'needle\n');
    // Root reads a mode-000 directory anyway; a directory removed while the walk reaches it
    // (build output, a temp dir) fails the same way for everyone.
    await chmod(path.join(cwd, 'locked'), 0o000);
    const ctx = (): ToolContext => ({
      signal: new AbortController().signal,
      cwd,
      agentId: 'a',
      fitsState: () => true,
      guard: {
        path: (absolute) => {
          if (absolute === path.join(cwd, 'gone')) rmSync(absolute, { recursive: true });
          return undefined;
        },
      },
    });
    try {
      const globbed = await globTool.execute({ pattern: '**/*.txt' }, ctx());
      expect(globbed.text).toMatch(/^a\/f\.txt\n/m);
      expect(globbed.text).toContain('z/f.txt');
      expect(globbed.text).toMatch(/\[Skipped what could not be read \(no permission, or gone\): `gone`/);
      await mkdir(path.join(cwd, 'gone'));
      const grepped = await grepTool.execute({ pattern: 'needle' }, ctx());
      expect(grepped.text).toContain('a/f.txt:1: needle');
      expect(grepped.text).toContain('z/f.txt:1: needle');
      expect(grepped.text).toMatch(/\[Skipped what could not be read \(no permission, or gone\): `gone`/);
    } finally {
      await chmod(path.join(cwd, 'locked'), 0o755);
    }
  });
});
