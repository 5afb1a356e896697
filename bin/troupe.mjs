#!/usr/bin/env node
// The CLI runs from TypeScript source: tsx is a runtime dependency, so a fresh clone needs only
// `npm ci` (no build step) before `npx troupe ...` works.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
