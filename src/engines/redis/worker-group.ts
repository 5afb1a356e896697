/**
 * The workers of one `troupe worker` process: one {@link RedisWorker} on the main thread, or one
 * per worker thread with `threads > 1` (for agents whose rendering and tools need more than one
 * core). Each worker runs up to `concurrency` agents at once.
 */
import { Worker as Thread } from 'node:worker_threads';
import { EventEmitter } from 'eventemitter3';
import { describeValue, deserializeError, UserError } from '../../errors.ts';
import { workerEntry } from '../../package-files.ts';
import type { WorkerThreadCommand, WorkerThreadReport } from '../../protocol/scaleout-threads.ts';
import { RedisWorker, type RedisWorkerOptions } from './worker.ts';

const THREAD_ENTRY = workerEntry('redis-worker');

/** Options of {@link WorkerGroup.start}. */
export interface WorkerGroupOptions extends RedisWorkerOptions {
  /** Worker threads, each with its own RedisWorker; 1 runs the worker on the main thread. @default 1 */
  readonly threads?: number;
}

/** Events of a {@link WorkerGroup}. */
export interface WorkerGroupEvents {
  error: [error: Error];
}

interface Member {
  readonly id: number;
  close(force: boolean): Promise<void>;
}

/** Started workers. */
export class WorkerGroup extends EventEmitter<WorkerGroupEvents> {
  readonly #members: Member[] = [];
  #closing: Promise<void> | undefined;

  /** Starts every worker; rejects (after stopping the ones that started) if one cannot start. */
  static async start(options: WorkerGroupOptions = {}): Promise<WorkerGroup> {
    const { threads = 1, ...workerOptions } = options;
    if (!Number.isInteger(threads) || threads < 1) {
      throw new UserError(
        'invalid_option',
        `Expected \`threads\` to be an integer >= 1, got ${describeValue(threads)}`,
        {
          option: 'threads',
        },
      );
    }
    const group = new WorkerGroup();
    const started = await Promise.allSettled(
      Array.from({ length: threads }, () =>
        threads === 1 ? group.#inProcess(workerOptions) : group.#inThread(workerOptions),
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

  /** Stops every worker (see {@link RedisWorker.close}). Idempotent. */
  close(force = false): Promise<void> {
    this.#closing ??= Promise.all(this.#members.map((member) => member.close(force))).then(() => {});
    return this.#closing;
  }

  async #inProcess(options: RedisWorkerOptions): Promise<Member> {
    const worker = await RedisWorker.start(options);
    worker.on('error', (error) => this.emit('error', error));
    return { id: worker.id, close: (force) => worker.close(force) };
  }

  #inThread(options: RedisWorkerOptions): Promise<Member> {
    const thread = new Thread(THREAD_ENTRY, { workerData: options });
    let closed: () => void = () => {};
    const whenClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    thread.on('exit', () => closed());
    return new Promise((resolve, reject) => {
      thread.on('error', (error) => {
        reject(error);
        this.emit('error', error);
      });
      thread.on('message', (report: WorkerThreadReport) => {
        switch (report.type) {
          case 'ready':
            resolve({
              id: report.workerId,
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
