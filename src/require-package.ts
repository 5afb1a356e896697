/**
 * `require()` for the CommonJS packages troupe loads at start. Imported from an ES module, a
 * CommonJS file is first scanned for its export names by Node's cjs-module-lexer, on every start of
 * every thread: for liquidjs (no `exports`, a 180 KB CommonJS `main`) that scan cost ~70 ms of CPU
 * of each actor-host thread's and CLI process's start, against ~30 ms for the whole `require()`.
 * Resolved from troupe's own location, as `import` would be.
 */
import { createRequire } from 'node:module';

export const requirePackage = createRequire(import.meta.url);
