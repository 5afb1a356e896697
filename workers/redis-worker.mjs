// Bootstrap of a `troupe worker --threads N` thread. tsx does not reach into worker threads on
// Node 20 by itself, so it is registered here before the TypeScript entry is imported.
import { register } from 'tsx/esm/api';

register();
await import('./redis-worker.ts');
