import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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
