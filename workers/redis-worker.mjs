// Bootstrap of a `troupe worker --threads N` thread in a source checkout (installed, the thread
// runs dist/workers/redis-worker.js). Like workers/actor-host.mjs: a cached esbuild bundle of the
// TypeScript entry, and TypeScript tool or provider modules bundled or imported through tsx.
// TROUPE_DEV_BUNDLE=0: through tsx.
import { importSources } from './dev-bundle.mjs';

await importSources('redis-worker');
