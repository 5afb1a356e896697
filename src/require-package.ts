/**
 * `require()` for the CommonJS packages troupe loads at start. Imported from an ES module, a
 * CommonJS file is first scanned for its export names by Node's cjs-module-lexer, on every start of
 * every thread: for liquidjs (no `exports`, a 180 KB CommonJS `main`) that scan cost ~70 ms of CPU
 * of each actor-host thread's and CLI process's start, against ~30 ms for the whole `require()`.
 * Resolved from troupe's own location, as `import` would be. Packages only some agents need (semver
 * for block versions, picomatch for path rules and glob, re2js for grep and safe patterns) are
 * loaded on first use with {@link lazyPackage}: together they were ~80 ms of each thread's start.
 */
import { createRequire } from 'node:module';

export const requirePackage = createRequire(import.meta.url);

/** A package loaded by the first call of the returned function (then the same module each call). */
export function lazyPackage<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requirePackage(id) as T;
    return loaded;
  };
}
