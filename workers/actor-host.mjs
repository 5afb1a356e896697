// piscina loads this plain ESM file in each worker thread of a source checkout (installed, the
// thread runs dist/workers/actor-host.js). tsx does not reach into worker threads on Node 20 by
// itself, and through its hooks the host's start costs ~3x its compiled start, so the thread runs
// a cached esbuild bundle of the TypeScript host (workers/dev-bundle.mjs); a TypeScript tool or
// provider module is bundled too when it lies in the checkout, else imported after tsx is
// registered in the thread. TROUPE_DEV_BUNDLE=0: through tsx.
import { importSources } from './dev-bundle.mjs';

const host = await importSources('actor-host');
export default host.default;
