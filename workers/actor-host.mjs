// piscina loads this plain ESM file in each worker thread. tsx does not reach into worker threads
// on Node 20 by itself, so it is registered here before the TypeScript host is imported; the .ts
// module cannot use top-level await either, which this bootstrap can.
import { register } from 'tsx/esm/api';

register();
const host = await import('./actor-host.ts');
export default host.default;
