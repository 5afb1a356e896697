#!/usr/bin/env node
// The `troupe` command. Installed, it runs the compiled JavaScript in dist/. In a source checkout
// (src/ beside bin/, tsx installed as a dev dependency) it runs the TypeScript sources, so an edit
// takes effect without a build: as a bundle esbuild makes and caches until a source file changes
// (workers/dev-bundle.mjs; TROUPE_DEV_BUNDLE=0 runs them through tsx instead);
// `npm run build` compiles dist/ for the other case.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/bin.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/bin.js', import.meta.url);

/** The checkout's CLI, bundled or through tsx (workers/dev-bundle.mjs); false when it cannot run. */
async function ranFromSources() {
  if (!existsSync(source)) return false;
  const { importSources } = await import('../workers/dev-bundle.mjs');
  return (await importSources('cli')) !== undefined;
}

if (await ranFromSources()) {
  // the CLI ran from the sources
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(
    'troupe: neither dist/ nor tsx was found: run `npm install` (tsx is a dev dependency) or `npm run build`\n',
  );
  process.exitCode = 70;
}
