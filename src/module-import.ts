/**
 * Imports a user's module (a tool, provider or scorer module) by file URL. In a source checkout,
 * troupe's threads and the CLI may run as a JavaScript bundle with no TypeScript loader
 * registered (workers/dev-bundle.mjs); such a bundle installs a hook under
 * `Symbol.for('troupe.registerTypeScript')` that registers tsx, and a TypeScript module is imported
 * only after it ran. Installed, no hook exists and the import is a plain `import()`: a `.ts` module
 * then needs a loader the user started Node with (`node --import tsx`).
 */

const TYPESCRIPT_FILE = /\.[cm]?tsx?$/;
const REGISTER_TYPESCRIPT = Symbol.for('troupe.registerTypeScript');

/** The namespace of the module at `url` (a `file:` URL). */
export async function importModule(url: string): Promise<Record<string, unknown>> {
  if (TYPESCRIPT_FILE.test(new URL(url).pathname)) {
    const register = (globalThis as { [REGISTER_TYPESCRIPT]?: () => Promise<void> })[REGISTER_TYPESCRIPT];
    if (register !== undefined) await register();
  }
  return (await import(url)) as Record<string, unknown>;
}
