/**
 * Worker-thread entry of `troupe worker --threads N`: one RedisWorker per thread, taking agent jobs
 * from the queue like a worker process does. It reports over its parent port (see
 * src/protocol/scaleout-threads.ts) and closes when told to.
 */
import { parentPort, resourceLimits, workerData } from 'node:worker_threads';
import { RedisWorker, type RedisWorkerOptions } from '../src/engines/redis/worker.ts';
import { serializeError } from '../src/errors.ts';
import type { WorkerThreadCommand, WorkerThreadReport } from '../src/protocol/scaleout-threads.ts';

function report(message: WorkerThreadReport): void {
  parentPort?.postMessage(message);
}

async function main(): Promise<void> {
  const worker = await RedisWorker.start(workerData as RedisWorkerOptions);
  worker.on('error', (error) => report({ type: 'error', error: serializeError(error) }));
  parentPort?.on('message', (command: WorkerThreadCommand) => {
    if (command.type !== 'close') return;
    void worker.close(command.force).then(() => {
      report({ type: 'closed' });
      parentPort?.close();
    });
  });
  report({ type: 'ready', workerId: worker.id, youngGenerationMb: resourceLimits.maxYoungGenerationSizeMb });
}

// A .ts module loaded in a thread cannot use top-level await (see redis-worker.mjs).
main().catch((error: unknown) => {
  report({ type: 'start_failed', error: serializeError(error) });
  parentPort?.close();
});
