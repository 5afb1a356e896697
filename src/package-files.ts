/**
 * Where troupe's own files are. Installed, troupe is compiled JavaScript under `dist/` (this module
 * is `dist/src/package-files.js`); in a source checkout it is TypeScript run by tsx or vitest (this
 * module is `src/package-files.ts`). Everything that depends on the difference is decided here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** True when troupe runs compiled (from `dist/`), false when it runs as TypeScript source. */
export const RUNNING_COMPILED = import.meta.url.endsWith('.js');

/** The package root (the folder of troupe's package.json) as a URL ending in `/`. */
const ROOT_URL = new URL(RUNNING_COMPILED ? '../../' : '../', import.meta.url);

/** The package root (the folder of troupe's package.json), in both layouts. */
export const PACKAGE_ROOT = fileURLToPath(ROOT_URL).replace(/[\\/]$/, '');

/** The worker-thread entry points in `workers/`. */
export type WorkerEntryName = 'actor-host' | 'redis-worker';

/**
 * URL of the file a worker thread running `name` starts from: the compiled entry
 * (`dist/workers/<name>.js`) when installed, else the entry's `.mjs` bootstrap, which starts the
 * thread from a cached bundle of the TypeScript entry, or through tsx registered inside the thread
 * (tsx does not reach into worker threads on Node 20 by itself): workers/dev-bundle.mjs.
 */
export function workerEntry(name: WorkerEntryName): URL {
  return new URL(`../workers/${name}.${RUNNING_COMPILED ? 'js' : 'mjs'}`, import.meta.url);
}

/**
 * Path of a module of the source tree that other threads import by path (the demo's model):
 * `relative` is its path from the package root in the sources (`examples/x/y.ts`); compiled, it is
 * the `.js` file the build wrote under `dist/`.
 */
export function sourceModulePath(relative: string): string {
  const file = RUNNING_COMPILED ? `dist/${relative.replace(/\.ts$/, '.js')}` : relative;
  return fileURLToPath(new URL(file, ROOT_URL));
}

let version: string | undefined;

/** troupe's version, from its package.json (read on first use). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL('package.json', ROOT_URL), 'utf8')) as { version: string })
    .version;
  return version;
}
