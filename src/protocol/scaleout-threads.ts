/**
 * Messages between a `troupe worker` process and its worker threads (`--threads N`), each thread
 * running one {@link RedisWorker}: one discriminated union per direction.
 */
import type { SerializedError } from '../errors.ts';

/** process -> thread */
export type WorkerThreadCommand = { readonly type: 'close'; readonly force: boolean };

/** thread -> process */
export type WorkerThreadReport =
  | {
      readonly type: 'ready';
      readonly workerId: number;
      /** The thread's young generation in MiB, as Node sized it (`resourceLimits`). */
      readonly youngGenerationMb: number | undefined;
    }
  | { readonly type: 'error'; readonly error: SerializedError }
  | { readonly type: 'start_failed'; readonly error: SerializedError }
  | { readonly type: 'closed' };
