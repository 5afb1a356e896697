#!/usr/bin/env node
// The `troupe` command. Installed, it runs the compiled JavaScript in dist/. In a source checkout
// (src/ beside bin/, tsx installed as a dev dependency) it runs the TypeScript sources, so an edit
// takes effect without a build: as a bundle esbuild makes and caches until a source file changes
// (workers/dev-bundle.mjs; TROUPE_DEV_BUNDLE=0 runs them through tsx instead);
// `npm run build` compiles dist/ for the other case.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/bin.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/bin.js', import.meta.url);

async function tsx() {
  try {
    return await import('tsx/esm/api');
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/** The source checkout's CLI: bundled (cached), else through tsx; false when neither is installed. */
async function runSources() {
  const dev = await import('../workers/dev-bundle.mjs');
  const bundle = await dev.devBundle('cli');
  if (bundle !== undefined) {
    dev.registerTypeScriptOnDemand();
    await import(bundle.href);
    return true;
  }
  const api = await tsx();
  if (api === undefined) return false;
  api.register();
  await import(source.href);
  return true;
}

if (existsSync(source) && (await runSources())) {
  // ran from the sources
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(
    'troupe: neither dist/ nor tsx was found: run `npm install` (tsx is a dev dependency) or `npm run build`\n',
  );
  process.exitCode = 70;
}
