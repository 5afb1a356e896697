/**
 * workers/dev-bundle.mjs: a checkout's threads and CLI start from a cached bundle of the sources,
 * which must be rebuilt when (and only when) a bundled file changes, keep each file's own
 * `import.meta.url`, and leave a fallback to tsx when it cannot build. A user's TypeScript module
 * inside the checkout (a test fixture, an example's tool) is bundled the same way.
 */
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM module of the checkout, without declarations
import { bundleModule, devBundle } from '../../workers/dev-bundle.mjs';

const root = mkdtempSync(path.join(tmpdir(), 'troupe-dev-bundle-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Writes a file of the miniature checkout, dated `ageMs` in the past: a file dated after its build
 * started is not trusted (it may have been edited while esbuild read it), and the test must not
 * depend on how fast it runs.
 */
function write(relative: string, text: string, ageMs = 60_000): void {
  const file = path.join(root, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  const date = new Date(Date.now() - ageMs);
  utimesSync(file, date, date);
}

/** A checkout in miniature: the three entries, one shared module, and a writable node_modules. */
write('src/common.ts', "export const word: string = 'first';\nexport const where = import.meta.url;\n");
write(
  'src/cli/bin.ts',
  "import { where, word } from '../common.ts';\nexport const cli = { word, where, self: import.meta.url };\n",
);
write('workers/actor-host.ts', 'export default async function host(): Promise<void> {}\n');
write('workers/redis-worker.ts', 'export {};\n');
mkdirSync(path.join(root, 'node_modules'));

type Cli = { word: string; where: string; self: string };
const load = async (url: URL): Promise<Cli> => ((await import(url.href)) as { cli: Cli }).cli;

it('builds once, reuses the build while nothing changed, and rebuilds after an edit', async () => {
  const first: URL = await devBundle('cli', root);
  expect(first.pathname).toContain(path.join(root, 'node_modules', '.cache', 'troupe-dev'));
  const cli = await load(first);
  expect(cli.word).toBe('first');
  // Each source keeps its own import.meta.url inside the bundle.
  expect(cli.where).toBe(pathToFileURL(path.join(root, 'src/common.ts')).href);
  expect(cli.self).toBe(pathToFileURL(path.join(root, 'src/cli/bin.ts')).href);

  expect((await devBundle('cli', root)).href).toBe(first.href);

  // Same size, new content and mtime: the manifest's mtime check sees it.
  write(
    'src/common.ts',
    "export const word: string = 'again';\nexport const where = import.meta.url;\n",
    30_000,
  );
  const second: URL = await devBundle('cli', root);
  expect(second.href).not.toBe(first.href);
  expect((await load(second)).word).toBe('again');
});

it('gives no bundle (the caller falls back to tsx) when switched off or when the build fails', async () => {
  const saved = process.env.TROUPE_DEV_BUNDLE;
  process.env.TROUPE_DEV_BUNDLE = '0';
  try {
    expect(await devBundle('cli', root)).toBeUndefined();
  } finally {
    if (saved === undefined) delete process.env.TROUPE_DEV_BUNDLE;
    else process.env.TROUPE_DEV_BUNDLE = saved;
  }
  write('src/common.ts', 'export const word: string = ;\n', 10_000);
  expect(await devBundle('cli', root)).toBeUndefined();
});

it("bundles a user's module inside the checkout with the files it imports, each keeping its own import.meta", async () => {
  write('src/common.ts', "export const word: string = 'shared';\nexport const where = import.meta.url;\n");
  write(
    'test/fixtures/tools.ts',
    [
      "import { where, word } from '../../src/common.ts';",
      'export const tool = { word, where, self: import.meta.url, dir: import.meta.dirname, file: import.meta.filename };',
      '',
    ].join('\n'),
  );
  const file = path.join(root, 'test/fixtures/tools.ts');
  const url: URL = await bundleModule(file, root);
  expect(url.pathname).toContain(path.join(root, 'node_modules', '.cache', 'troupe-dev'));
  const { tool } = (await import(url.href)) as {
    tool: { word: string; where: string; self: string; dir: string; file: string };
  };
  expect(tool).toEqual({
    word: 'shared',
    where: pathToFileURL(path.join(root, 'src/common.ts')).href,
    self: pathToFileURL(file).href,
    dir: path.dirname(file),
    file,
  });
  expect((await bundleModule(file, root)).href).toBe(url.href);

  // An import of the module changed: built again.
  write(
    'src/common.ts',
    "export const word: string = 'edited';\nexport const where = import.meta.url;\n",
    30_000,
  );
  const edited: URL = await bundleModule(file, root);
  expect(edited.href).not.toBe(url.href);
  expect(((await import(edited.href)) as { tool: { word: string } }).tool.word).toBe('edited');
});

it('leaves a module outside the checkout, a non-.ts file, or one that does not build to tsx', async () => {
  const outside = mkdtempSync(path.join(tmpdir(), 'troupe-dev-bundle-outside-'));
  try {
    writeFileSync(path.join(outside, 'tools.ts'), 'export const x = 1;\n');
    expect(await bundleModule(path.join(outside, 'tools.ts'), root)).toBeUndefined();
  } finally {
    rmSync(outside, { recursive: true, force: true });
  }
  write('test/fixtures/tools.cts', 'module.exports = {};\n');
  expect(await bundleModule(path.join(root, 'test/fixtures/tools.cts'), root)).toBeUndefined();
  write('test/fixtures/broken.ts', 'export const x: number = ;\n');
  expect(await bundleModule(path.join(root, 'test/fixtures/broken.ts'), root)).toBeUndefined();
});

it("names a worktree's own files in its source maps when its node_modules links to another checkout's", async () => {
  // Node loads the bundle from the real path of the cache, inside the other checkout: sources
  // relative to the map resolved there, and a blocked thread's stack named the other copy.
  const worktree = mkdtempSync(path.join(tmpdir(), 'troupe-dev-bundle-worktree-'));
  const other = mkdtempSync(path.join(tmpdir(), 'troupe-dev-bundle-other-'));
  try {
    const file = path.join(worktree, 'test/fixtures/tools.ts');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'export const tool = 1;\n');
    const date = new Date(Date.now() - 60_000);
    utimesSync(file, date, date);
    mkdirSync(path.join(other, 'node_modules'));
    symlinkSync(path.join(other, 'node_modules'), path.join(worktree, 'node_modules'));
    const url: URL = await bundleModule(file, worktree);
    const map = realpathSync(`${fileURLToPath(url)}.map`);
    const { sources } = JSON.parse(readFileSync(map, 'utf8')) as { sources: string[] };
    expect(sources.map((source) => new URL(source, pathToFileURL(map)).href)).toEqual([
      pathToFileURL(file).href,
    ]);
  } finally {
    rmSync(worktree, { recursive: true, force: true });
    rmSync(other, { recursive: true, force: true });
  }
});
