/**
 * The workers of one `troupe worker` process: one {@link RedisWorker} on the main thread, or one
 * per worker thread with `threads > 1` (for agents whose rendering and tools need more than one
 * core) or with `youngGenerationMb` (a thread's heap is sized when it starts; the main thread's
 * only by node flags). Each worker runs up to `concurrency` agents at once.
 */
import { Worker as Thread } from 'node:worker_threads';
import { EventEmitter } from 'eventemitter3';
import { describeValue, deserializeError, UserError } from '../../errors.ts';
import { workerEntry } from '../../package-files.ts';
import type { WorkerThreadCommand, WorkerThreadReport } from '../../protocol/scaleout-threads.ts';
import { DEFAULT_HOST_YOUNG_GENERATION_MB } from '../threads/options.ts';
import { RedisWorker, type RedisWorkerOptions } from './worker.ts';

let threadEntry = workerEntry('redis-worker');

/**
 * Starts worker threads from `entry` instead of workers/redis-worker until the returned function is
 * called. For tests only (a thread that crashes on cue); not exported from the package.
 * @internal
 */
export function useWorkerThreadEntry(entry: URL): () => void {
  const previous = threadEntry;
  threadEntry = entry;
  return () => {
    threadEntry = previous;
  };
}

/** Options of {@link WorkerGroup.start}. */
export interface WorkerGroupOptions extends RedisWorkerOptions {
  /**
   * Worker threads, each with its own RedisWorker; 1 runs the worker on the main thread (unless
   * `youngGenerationMb` is given). @default 1
   */
  readonly threads?: number;
  /**
   * Young generation of each worker's heap in MiB (`resourceLimits.maxYoungGenerationSizeMb`).
   * Given, every worker runs in a worker thread, one as well. `troupe worker` passes
   * {@link WORKER_YOUNG_GENERATION_MB}. @default Node's (48 for a thread)
   */
  readonly youngGenerationMb?: number;
}

/**
 * The young generation `troupe worker` gives its workers: twice the actor hosts' (semi-spaces of
 * 64 MiB). A worker running hundreds of agents allocates ~90 KiB per model request; with Node's
 * default (16 MiB semi-spaces) it scavenged ~100 times per 2,500 agents, with 96 ~64 times, for
 * 2-7 % less worker CPU (bench/RESULTS.md, redis25), and 192 took the workers' CPU per 1,000-agent
 * fan-out from a median of 770-810 ms to 730-740 in three alternated pairs (lead, session 5). A
 * worker process is the machine's job, so it spends up to ~96 MiB more memory per worker on this.
 */
export const WORKER_YOUNG_GENERATION_MB = 2 * DEFAULT_HOST_YOUNG_GENERATION_MB;

/** Events of a {@link WorkerGroup}. */
export interface WorkerGroupEvents {
  error: [error: Error];
  /**
   * A worker thread ended without being closed (an uncaught error, out of memory): its agents'
   * locks expire and other workers resume them. On the main thread the same error would have ended
   * the process; `troupe worker` exits with code 1.
   */
  exit: [event: { readonly workerId: number; readonly code: number }];
}

interface Member {
  readonly id: number;
  /** Of a worker thread (undefined on the main thread). */
  readonly youngGenerationMb: number | undefined;
  close(force: boolean): Promise<void>;
}

/** Started workers. */
export class WorkerGroup extends EventEmitter<WorkerGroupEvents> {
  readonly #members: Member[] = [];
  #closing: Promise<void> | undefined;

  /** Starts every worker; rejects (after stopping the ones that started) if one cannot start. */
  static async start(options: WorkerGroupOptions = {}): Promise<WorkerGroup> {
    const { threads = 1, youngGenerationMb, ...workerOptions } = options;
    if (!Number.isInteger(threads) || threads < 1) {
      throw new UserError(
        'invalid_option',
        `Expected \`threads\` to be an integer >= 1, got ${describeValue(threads)}`,
        {
          option: 'threads',
        },
      );
    }
    if (youngGenerationMb !== undefined && !(Number.isFinite(youngGenerationMb) && youngGenerationMb > 0)) {
      throw new UserError(
        'invalid_option',
        `Expected \`youngGenerationMb\` to be a number > 0, got ${describeValue(youngGenerationMb)}`,
        { option: 'youngGenerationMb' },
      );
    }
    const group = new WorkerGroup();
    const started = await Promise.allSettled(
      Array.from({ length: threads }, () =>
        threads === 1 && youngGenerationMb === undefined
          ? group.#inProcess(workerOptions)
          : group.#inThread(workerOptions, youngGenerationMb),
      ),
    );
    for (const result of started) if (result.status === 'fulfilled') group.#members.push(result.value);
    const failure = started.find((result) => result.status === 'rejected');
    if (failure) {
      await group.close(true);
      throw failure.reason;
    }
    return group;
  }

  /** Worker numbers, as agent events report them (`hostId`). */
  get ids(): number[] {
    return this.#members.map((member) => member.id);
  }

  /** Each worker's young generation in MiB when it runs in a thread (undefined on the main thread). */
  get youngGenerationsMb(): (number | undefined)[] {
    return this.#members.map((member) => member.youngGenerationMb);
  }

  /** Stops every worker (see {@link RedisWorker.close}). Idempotent. */
  close(force = false): Promise<void> {
    this.#closing ??= Promise.all(this.#members.map((member) => member.close(force))).then(() => {});
    return this.#closing;
  }

  async #inProcess(options: RedisWorkerOptions): Promise<Member> {
    const worker = await RedisWorker.start(options);
    worker.on('error', (error) => this.emit('error', error));
    return { id: worker.id, youngGenerationMb: undefined, close: (force) => worker.close(force) };
  }

  #inThread(options: RedisWorkerOptions, youngGenerationMb: number | undefined): Promise<Member> {
    const thread = new Thread(threadEntry, {
      workerData: options,
      ...(youngGenerationMb === undefined
        ? {}
        : { resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb } }),
    });
    let closed: () => void = () => {};
    const whenClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    let workerId: number | undefined;
    thread.on('exit', (code) => {
      closed();
      if (workerId !== undefined && this.#closing === undefined) this.emit('exit', { workerId, code });
    });
    return new Promise((resolve, reject) => {
      thread.on('error', (error) => {
        reject(error);
        this.emit('error', error);
      });
      thread.on('message', (report: WorkerThreadReport) => {
        switch (report.type) {
          case 'ready':
            workerId = report.workerId;
            resolve({
              id: report.workerId,
              youngGenerationMb: report.youngGenerationMb,
              close: async (force) => {
                thread.postMessage({ type: 'close', force } satisfies WorkerThreadCommand);
                await whenClosed;
              },
            });
            return;
          case 'start_failed':
            reject(deserializeError(report.error));
            return;
          case 'error':
            this.emit('error', deserializeError(report.error));
            return;
          case 'closed':
            // Everything in the thread is closed; an idle handle must not keep it alive.
            void thread.terminate();
            return;
        }
      });
    });
  }
}
