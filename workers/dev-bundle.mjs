// Development only: a source checkout. The installed package runs dist/ and never loads this file.
//
// Through tsx's loader hooks, every module of troupe's TypeScript sources costs a round trip to the
// hooks: starting an actor-host thread took ~1.5 s of CPU on a 2-core machine (~0.55 s as
// JavaScript), and `troupe --version` ~0.7 s (~0.2 s). The test suite starts hundreds of both.
// So the entries a new thread or process starts from (the CLI, the actor host, the redis worker)
// are bundled together by esbuild (which tsx already brings) into JavaScript under
// node_modules/.cache/troupe-dev/, split into chunks so that lazy imports stay lazy, and reused
// while no bundled file changed: each start compares the size and mtime of every input with the
// manifest, and builds again on any difference. Packages stay outside the bundle.
//
// A TypeScript module of the user's that the bundle imports (a tool, provider or scorer module:
// src/module-import.ts calls the hook `importTypeScriptOnDemand` installs) is bundled the same way
// when it lies inside the checkout (the test fixtures, examples/), into one JavaScript file with
// the sources it imports: registering tsx in a thread starts a loader-hooks thread, and every
// module it loads costs a round trip to it (~2 s of CPU for a thread that imports one fixture
// importing a few files of src/). A module elsewhere, or one esbuild cannot build, goes through
// tsx, registered in that thread then.
//
// Source maps are written beside the bundle's files (`.mjs.map`), which Node reads and applies to
// stack traces only when asked (`NODE_OPTIONS=--enable-source-maps`); inline, they made the files
// a thread reads at start ten times larger.
// TROUPE_DEV_BUNDLE=0 runs the entries through tsx as before.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CHECKOUT = fileURLToPath(new URL('../', import.meta.url));

/** Where a checkout's bundle lives: one cache per checkout (worktrees may share a node_modules). */
function cacheOf(root) {
  const cache = path.join(root, 'node_modules', '.cache', 'troupe-dev', hashOf(root));
  return { root, cache, manifest: path.join(cache, 'manifest.json') };
}

/** Where the bundle of a user's module `file` inside the checkout `root` lives. */
function moduleCacheOf(root, file) {
  const cache = path.join(cacheOf(root).cache, 'modules', hashOf(file));
  return { root, cache, manifest: path.join(cache, 'manifest.json') };
}

function hashOf(text) {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}
/** The manifest format and build options: a build made with other options is not reused. */
const VERSION = 3;

/** The bundle's entries: output name -> source path from the package root. */
const ENTRIES = {
  cli: 'src/cli/bin.ts',
  'actor-host': 'workers/actor-host.ts',
  'redis-worker': 'workers/redis-worker.ts',
};

/** Builds kept beside the current one (a running process may still load chunks from them). */
const KEEP_BUILDS = 3;
const KEEP_BUILD_MS = 60 * 60 * 1000;

/** The manifest's build folder when every input still has the size and mtime it was built from. */
function freshBuild({ root, cache, manifest: manifestFile }) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  } catch {
    return undefined;
  }
  if (manifest?.version !== VERSION) return undefined;
  for (const [file, size, mtimeMs] of manifest.inputs) {
    let stats;
    try {
      stats = statSync(path.join(root, file));
    } catch {
      return undefined;
    }
    if (stats.size !== size || stats.mtimeMs !== mtimeMs) return undefined;
  }
  return path.join(cache, manifest.build);
}

/**
 * Each source file's `import.meta.url` (and `filename`, `dirname`) stays its own file's inside the
 * bundle: src/ finds the package root and resolves packages from it (src/package-files.ts,
 * createRequire), and a user's module finds the files beside it.
 */
const keepImportMetaUrl = {
  name: 'keep-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.m?ts$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8')
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path))),
      loader: 'ts',
    }));
  },
};

/**
 * Builds `entryPoints` (output name -> absolute source path) into a new folder and points the
 * manifest at it; returns the folder.
 */
async function build({ root, cache, manifest }, entryPoints) {
  const esbuild = await import('esbuild');
  const started = Date.now();
  const name = `build-${started}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const folder = path.join(cache, name);
  const result = await esbuild.build({
    entryPoints,
    outdir: folder,
    // The metafile's input paths are relative to this, and the manifest's to the checkout: the
    // process that builds may run anywhere (a CLI in a user's project, a test's temp dir).
    absWorkingDir: root,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: Object.keys(entryPoints).length > 1,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'silent',
    plugins: [keepImportMetaUrl],
  });
  absoluteSources(root, result.metafile.outputs);
  const inputs = Object.keys(result.metafile.inputs).map((file) => {
    const stats = statSync(path.join(root, file));
    return [file, stats.size, stats.mtimeMs];
  });
  // A file edited while esbuild ran may be in the build in its old form: the manifest is left as
  // it was then, so the next start builds again; this start still uses what it built.
  if (inputs.every(([, , mtimeMs]) => mtimeMs < started - 1)) {
    // Written under a unique name, then renamed: a process starting meanwhile never reads half.
    writeFileSync(`${manifest}.${name}`, JSON.stringify({ version: VERSION, build: name, inputs }));
    renameSync(`${manifest}.${name}`, manifest);
  }
  removeOldBuilds(cache, name);
  return folder;
}

/**
 * Makes the source maps' `sources` absolute `file:` URLs of the checkout's files. esbuild writes
 * them relative to the map, and Node loads the bundle from the real path of its cache: in a git
 * worktree whose node_modules links to another checkout, relative sources resolved into that
 * checkout, so a stack (a blocked thread's, stack-probe.ts) named the other copy of the file and
 * the engine could not match it to the provider module it blamed.
 */
function absoluteSources(root, outputs) {
  for (const output of Object.keys(outputs)) {
    if (!output.endsWith('.map')) continue;
    const file = path.join(root, output);
    const map = JSON.parse(readFileSync(file, 'utf8'));
    // Virtual sources (esbuild's `<define:...>`, `<runtime>`) are no files: left as they are.
    map.sources = map.sources.map((source) =>
      source.startsWith('<') ? source : pathToFileURL(path.resolve(path.dirname(file), source)).href,
    );
    writeFileSync(file, JSON.stringify(map));
  }
}

/** Removes builds older than an hour, except the newest few and `current`. */
function removeOldBuilds(cache, current) {
  const builds = readdirSync(cache)
    .filter((entry) => entry.startsWith('build-') && entry !== current)
    .map((entry) => ({ entry, mtimeMs: statSync(path.join(cache, entry)).mtimeMs }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const { entry, mtimeMs } of builds.slice(KEEP_BUILDS)) {
    if (Date.now() - mtimeMs > KEEP_BUILD_MS)
      rmSync(path.join(cache, entry), { recursive: true, force: true });
  }
}

/**
 * URL of the bundled `entry` (`cli`, `actor-host` or `redis-worker`) of the checkout at `root`
 * (this one unless a test says otherwise), built first when there is no
 * bundle or a source file changed since; undefined when bundling is switched off
 * (TROUPE_DEV_BUNDLE=0) or cannot be done here (no esbuild, no writable cache, a build error).
 */
export async function devBundle(entry, root = CHECKOUT) {
  if (process.env.TROUPE_DEV_BUNDLE === '0') return undefined;
  const entryPoints = Object.fromEntries(
    Object.entries(ENTRIES).map(([out, src]) => [out, path.join(root, src)]),
  );
  const folder = await freshOrBuilt(cacheOf(root), entryPoints);
  return folder === undefined ? undefined : pathToFileURL(path.join(folder, `${entry}.mjs`));
}

/**
 * URL of the bundle of a user's TypeScript module `file` (an absolute path inside the checkout at
 * `root`): the module and every source file it imports, packages left outside. Undefined when
 * bundling is switched off, the file is not a `.ts` or `.mts` file inside the checkout, or it
 * cannot be bundled (the caller imports it through tsx, which reports its errors).
 */
export async function bundleModule(file, root = CHECKOUT) {
  if (process.env.TROUPE_DEV_BUNDLE === '0') return undefined;
  const relative = path.relative(root, file);
  if (relative.startsWith('..') || path.isAbsolute(relative) || !/\.m?ts$/.test(file)) return undefined;
  const folder = await freshOrBuilt(moduleCacheOf(root, file), { module: file });
  return folder === undefined ? undefined : pathToFileURL(path.join(folder, 'module.mjs'));
}

/** The build folder of `where`, built first when missing or stale; undefined when it cannot be. */
async function freshOrBuilt(where, entryPoints) {
  const folder = freshBuild(where);
  if (folder !== undefined) return folder;
  try {
    mkdirSync(where.cache, { recursive: true });
    return await build(where, entryPoints);
  } catch {
    // No esbuild, a cache folder that cannot be written, or a source esbuild cannot read: the
    // caller runs the sources through tsx, which reports a source's error as it always did.
    return undefined;
  }
}

let registered;

/** Registers tsx in this thread, once. */
function registerTypeScript() {
  registered ??= import('tsx/esm/api').then((api) => {
    api.register();
  });
  return registered;
}

/**
 * Lets the bundle import TypeScript modules (src/module-import.ts): a module inside the checkout
 * is imported from its bundle, any other after tsx was registered in this thread.
 */
export function importTypeScriptOnDemand() {
  globalThis[Symbol.for('troupe.importTypeScript')] = async (url) => {
    const bundled = await bundleModule(fileURLToPath(url));
    if (bundled !== undefined) return bundled.href;
    await registerTypeScript();
    return url;
  };
}

/**
 * Imports `entry` of this checkout the way a thread or process of a checkout starts it: its bundle
 * (a TypeScript module of the user's bundled too, or imported through tsx), else its TypeScript
 * source through tsx. Resolves with the module's namespace; undefined when tsx is missing too.
 */
export async function importSources(entry) {
  const bundle = await devBundle(entry);
  if (bundle !== undefined) {
    importTypeScriptOnDemand();
    return import(bundle.href);
  }
  let api;
  try {
    api = await import('tsx/esm/api');
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
  api.register();
  return import(new URL(`../${ENTRIES[entry]}`, import.meta.url).href);
}
