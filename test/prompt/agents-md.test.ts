import { copyFile, mkdir, readFile, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENTS_MD_BYTE_LIMIT } from '../../src/constants.ts';
import { collectAgentsMd, renderAgentsMdSection } from '../../src/prompt/agents-md.ts';
import { useTempDirs, writeTree } from './temp-dir.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const corpus = path.resolve(repoRoot, 'test/fixtures/corpus/agents-md');
const tempDir = useTempDirs();

/** Copies corpus files into a temp tree: `{ 'relative/in/tree': 'relative/in/corpus' }`. */
async function plant(root: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [target, source] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, target)), { recursive: true });
    await copyFile(path.join(corpus, source), path.join(root, target));
  }
}

describe('AGENTS.md collection', () => {
  it('collects from the git root down to the working directory, outer first, labelled with paths', async () => {
    const root = await tempDir();
    const repo = path.join(root, 'ai');
    await writeTree(repo, { '.git/HEAD': 'ref: refs/heads/main\n' });
    await plant(repo, {
      'AGENTS.md': 'vercel__ai/AGENTS.md',
      'packages/ai/AGENTS.md': 'vercel__ai/packages/ai/AGENTS.md',
    });
    // Above the git root, so not part of this project.
    await writeFile(path.join(root, 'AGENTS.md'), 'OUTSIDE THE REPO');
    const cwd = path.join(repo, 'packages/ai');

    const files = await collectAgentsMd(cwd);
    expect(files.map((file) => file.path)).toEqual([
      path.join(repo, 'AGENTS.md'),
      path.join(cwd, 'AGENTS.md'),
    ]);
    expect(files[0]?.text).toBe(await readFile(path.join(corpus, 'vercel__ai/AGENTS.md'), 'utf8'));

    const section = renderAgentsMdSection(files);
    const outer = section.indexOf(`<agents_md path="${path.join(repo, 'AGENTS.md')}">`);
    const inner = section.indexOf(`<agents_md path="${path.join(cwd, 'AGENTS.md')}">`);
    expect(outer).toBeGreaterThan(0);
    expect(inner).toBeGreaterThan(outer);
    expect(section).not.toContain('OUTSIDE THE REPO');
    expect(section).toContain('closer to the working directory wins');
  });

  it('skips directories without an AGENTS.md and reads deeply nested ones (pydantic-ai)', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.git': 'gitdir: /elsewhere/worktree\n' });
    await plant(repo, {
      'AGENTS.md': 'pydantic__pydantic-ai/AGENTS.md',
      'pydantic_ai_slim/pydantic_ai/models/AGENTS.md':
        'pydantic__pydantic-ai/pydantic_ai_slim/pydantic_ai/models/AGENTS.md',
    });
    const cwd = path.join(repo, 'pydantic_ai_slim/pydantic_ai/models');
    const files = await collectAgentsMd(cwd);
    expect(files.map((file) => path.relative(repo, file.path))).toEqual([
      'AGENTS.md',
      'pydantic_ai_slim/pydantic_ai/models/AGENTS.md',
    ]);
    expect(files.every((file) => file.truncatedFrom === undefined)).toBe(true);
  });

  it('follows a symlinked AGENTS.md (superpowers links it to CLAUDE.md)', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.git/HEAD': 'x' });
    await plant(repo, { 'CLAUDE.md': 'obra__superpowers/AGENTS.md' });
    await symlink('CLAUDE.md', path.join(repo, 'AGENTS.md'));
    const [file] = await collectAgentsMd(repo);
    expect(file?.text).toBe(await readFile(path.join(corpus, 'obra__superpowers/AGENTS.md'), 'utf8'));
  });

  it('follows a link to a file inside the project whose name starts with two dots', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.git/HEAD': 'x', '..notes.md': 'dotted but inside' });
    await symlink('..notes.md', path.join(repo, 'AGENTS.md'));
    const [file] = await collectAgentsMd(repo);
    expect(file?.text).toBe('dotted but inside');
  });

  it('skips, with a warning naming link and target, an AGENTS.md that links outside the project', async () => {
    const root = await tempDir();
    const repo = path.join(root, 'cloned');
    await writeTree(repo, { '.git/HEAD': 'x', 'sub/AGENTS.md': 'inside' });
    await writeFile(path.join(root, 'id_rsa'), 'PRIVATE KEY');
    await symlink(path.join(root, 'id_rsa'), path.join(repo, 'AGENTS.md'));
    const warnings: Error[] = [];
    const listener = (warning: Error): void => void warnings.push(warning);
    process.on('warning', listener);
    try {
      const files = await collectAgentsMd(path.join(repo, 'sub'));
      expect(files.map((file) => [file.path, file.text])).toEqual([
        [path.join(repo, 'sub/AGENTS.md'), 'inside'],
      ]);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listener);
    }
    expect(warnings.map((warning) => warning.message)).toEqual([
      expect.stringContaining(
        `${path.join(repo, 'AGENTS.md')}: it links to ${path.join(root, 'id_rsa')}, outside the project`,
      ),
    ]);
  });

  it('reads only the working directory when there is no git root', async () => {
    const root = await tempDir();
    await plant(root, { 'AGENTS.md': 'astral-sh__uv/AGENTS.md', 'sub/AGENTS.md': 'astral-sh__uv/AGENTS.md' });
    const files = await collectAgentsMd(path.join(root, 'sub'));
    expect(files.map((file) => file.path)).toEqual([path.join(root, 'sub/AGENTS.md')]);
  });

  it('caps a long file with a visible note (openai-agents-js, 34,656 bytes)', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.git/HEAD': 'x' });
    await plant(repo, { 'AGENTS.md': 'openai__openai-agents-js/AGENTS.md' });
    const original = await readFile(path.join(corpus, 'openai__openai-agents-js/AGENTS.md'));
    expect(original.length).toBeGreaterThan(AGENTS_MD_BYTE_LIMIT);

    const [file] = await collectAgentsMd(repo);
    expect(file?.truncatedFrom).toBe(original.length);
    const shown = Buffer.from(file?.text ?? '');
    expect(shown.length).toBeLessThanOrEqual(AGENTS_MD_BYTE_LIMIT);
    expect(shown.length).toBeGreaterThan(AGENTS_MD_BYTE_LIMIT - 4);
    expect(original.subarray(0, shown.length).equals(shown)).toBe(true);
    expect(renderAgentsMdSection(file ? [file] : [])).toContain(
      `[Truncated: this AGENTS.md has ${original.length} bytes; only the first ${shown.length} are shown]`,
    );
  });

  it('never cuts a multi-byte character in half', async () => {
    const repo = await tempDir();
    // 9 ASCII bytes, then "é" (2 bytes) straddling the 10-byte limit.
    await writeTree(repo, { '.git/HEAD': 'x', 'AGENTS.md': '123456789é and more' });
    const [file] = await collectAgentsMd(repo, { byteLimit: 10 });
    expect(file?.text).toBe('123456789');
    expect(file?.truncatedFrom).toBe(Buffer.byteLength('123456789é and more'));
  });

  it('reads only the part of a huge AGENTS.md it shows, and says its real size', async () => {
    const repo = await tempDir();
    await writeTree(repo, { '.git/HEAD': 'x', 'AGENTS.md': 'Use pnpm.\n' });
    // 3 GiB, sparse: read whole it was refused (ERR_FS_FILE_TOO_LARGE) and the file left out;
    // under 2 GiB it was read whole, to keep 32 KiB of it.
    const size = 3 * 2 ** 30;
    await truncate(path.join(repo, 'AGENTS.md'), size);
    const [file] = await collectAgentsMd(repo);
    expect(file?.text.startsWith('Use pnpm.\n')).toBe(true);
    expect(Buffer.byteLength(file?.text ?? '')).toBe(AGENTS_MD_BYTE_LIMIT);
    expect(file?.truncatedFrom).toBe(size);
    expect(renderAgentsMdSection(file ? [file] : [])).toContain(
      `[Truncated: this AGENTS.md has ${size} bytes; only the first ${AGENTS_MD_BYTE_LIMIT} are shown]`,
    );
  });

  it('renders nothing when no file was found', async () => {
    expect(renderAgentsMdSection(await collectAgentsMd(await tempDir()))).toBe('');
  });
});
