/**
 * Imports a user's module (a tool, provider or scorer module) by file URL. In a source checkout,
 * troupe's threads and the CLI may run as a JavaScript bundle with no TypeScript loader
 * registered (workers/dev-bundle.mjs); such a bundle installs a hook under
 * `Symbol.for('troupe.importTypeScript')` that gives the URL to import a TypeScript module from
 * (its own bundle, or the module itself once tsx is registered). Installed, no hook exists and the
 * import is a plain `import()`: a `.ts` module then needs a TypeScript loader in the thread that
 * imports it (`node --import tsx` registers one on the main thread only, on Node 20: worker threads
 * do not get it, so tool and provider modules are best given as JavaScript; docs/install.md).
 */

const TYPESCRIPT_FILE = /\.[cm]?tsx?$/;
const IMPORT_TYPESCRIPT = Symbol.for('troupe.importTypeScript');

/** The namespace of the module at `url` (a `file:` URL). */
export async function importModule(url: string): Promise<Record<string, unknown>> {
  let from = url;
  if (TYPESCRIPT_FILE.test(new URL(url).pathname)) {
    const hook = (globalThis as { [IMPORT_TYPESCRIPT]?: (url: string) => Promise<string> })[
      IMPORT_TYPESCRIPT
    ];
    if (hook !== undefined) from = await hook(url);
  }
  return (await import(from)) as Record<string, unknown>;
}
