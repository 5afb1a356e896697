// piscina loads this plain ESM file in each worker thread of a source checkout (installed, the
// thread runs dist/workers/actor-host.js). tsx does not reach into worker threads on Node 20 by
// itself, and through its hooks the host's start costs ~3x its compiled start, so the thread runs
// a cached esbuild bundle of the TypeScript host (workers/dev-bundle.mjs) and registers tsx only
// if a tool or provider module in TypeScript is imported. TROUPE_DEV_BUNDLE=0: through tsx.
import { devBundle, registerTypeScriptOnDemand } from './dev-bundle.mjs';

const bundle = await devBundle('actor-host');
let host;
if (bundle !== undefined) {
  registerTypeScriptOnDemand();
  host = await import(bundle.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  host = await import('./actor-host.ts');
}
export default host.default;
