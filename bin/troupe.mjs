#!/usr/bin/env node
// The `troupe` command. Installed, it runs the compiled JavaScript in dist/. In a source checkout
// (src/ beside bin/, tsx installed as a dev dependency) it runs the TypeScript sources through
// tsx, so an edit takes effect without a build; `npm run build` compiles dist/ for the other case.
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

const api = existsSync(source) ? await tsx() : undefined;
if (api !== undefined) {
  api.register();
  await import(source.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(
    'troupe: neither dist/ nor tsx was found: run `npm install` (tsx is a dev dependency) or `npm run build`\n',
  );
  process.exitCode = 70;
}
