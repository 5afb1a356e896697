/** Fan-out: many agents, results streamed as they finish, every partial result kept. */
import { abortReason } from '../abort.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { serializeError } from '../errors.ts';
import { cancelledError, failedOutcome } from '../loop/outcome.ts';
import type { AgentOutcome } from '../loop/types.ts';
import type { AgentHandle } from './agent-handle.ts';
import type { SpawnOptions } from './spawn-options.ts';

/** One agent run of a fan-out. */
export interface SpawnSpec extends Omit<SpawnOptions, 'signal' | 'parent'> {
  readonly agent: string | AgentDefinition;
}

/** Options of `Supervisor.fanOut`. */
export interface FanOutOptions {
  /** Agents running at once (the rest wait to be spawned). @default unlimited: the supervisor queues */
  readonly concurrency?: number;
  /**
   * Aborting it cancels every running agent of the fan-out; a spec not yet spawned is not spawned
   * at all: its result is Failed(cancelled) with agentId `''`.
   */
  readonly signal?: AbortSignal;
  /**
   * Keep every result and agent handle until the fan-out is dropped, for `all()`, `for await` and
   * `handles`. `false` for a large fan-out whose results the caller takes elsewhere (Supervisor
   * events, as `troupe fanout` does): nothing of an agent is kept once it ends and `handles` stays
   * empty. Only the results of the specs refused at spawn are kept (`invalid_request`, agentId
   * `''`: no agent, so no event, reports them): `for await` yields each as it is refused, and
   * `all()` resolves to them once every agent has ended (`[]` when there were none).
   * Kept, 20,000 outcomes (answers and results included) stayed in memory to the end of a run.
   * @default true
   */
  readonly keepResults?: boolean;
}

/** One finished agent of a fan-out. */
export interface FanOutResult {
  /** Position of the spec in the input. */
  readonly index: number;
  readonly spec: SpawnSpec;
  /**
   * '' when no agent was made for the spec: it was refused at spawn (`invalid_request`), or the
   * fan-out's signal aborted before its turn came (`cancelled`).
   */
  readonly agentId: string;
  readonly outcome: AgentOutcome;
}

interface Spawner {
  spawn(agent: string | AgentDefinition, options: SpawnOptions): AgentHandle;
}

/**
 * A running fan-out: `for await` yields results in completion order; `all()` gives them in input order.
 * Specs are taken from the iterable as slots free (with `concurrency`), not all at once: a generator
 * over a 20,000-row data set builds each spec when its agent is about to start.
 */
export class FanOut implements AsyncIterable<FanOutResult> {
  readonly #results: FanOutResult[] = [];
  readonly #waiters: (() => void)[] = [];
  readonly #all: Promise<FanOutResult[]>;
  #done = false;
  /** Handles of the agents spawned so far, in input order (sparse until spawned). */
  readonly handles: AgentHandle[] = [];

  /** @internal */
  constructor(supervisor: Spawner, specs: Iterable<SpawnSpec>, options: FanOutOptions) {
    const keep = options.keepResults !== false;
    const concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
    const source = specs[Symbol.iterator]();
    /** Specs taken from the source so far: the index of the next one. */
    let next = 0;
    let exhausted = false;
    let running = 0;
    /** What the source threw when asked for a spec: the fan-out takes no more and rejects with it. */
    let failure: { readonly error: unknown } | undefined;
    this.#all = new Promise((resolve, reject) => {
      const wake = (): void => {
        for (const waiter of this.#waiters.splice(0)) waiter();
      };
      const finishIfDone = (): void => {
        if (!exhausted || running > 0 || this.#done) return;
        this.#done = true;
        wake();
        if (failure !== undefined) reject(failure.error);
        else resolve([...this.#results].sort((a, b) => a.index - b.index));
      };
      // Wrapped: an `undefined` in the specs is a spec (refused at spawn), not their end.
      const take = (): { readonly spec: SpawnSpec } | undefined => {
        if (exhausted) return undefined;
        try {
          const step = source.next();
          if (step.done !== true) return { spec: step.value };
        } catch (error) {
          failure = { error };
        }
        exhausted = true;
        return undefined;
      };
      const record = (index: number, spec: SpawnSpec, agentId: string, outcome: AgentOutcome): void => {
        // A spec refused at spawn has no agent, so no Supervisor event says it failed: even when
        // results are not kept, all() is the only place that result is reported.
        if (!keep && agentId !== '') return;
        this.#results.push({ index, spec, agentId, outcome });
        wake();
      };
      const settle = (index: number, spec: SpawnSpec, agentId: string, outcome: AgentOutcome): void => {
        running -= 1;
        record(index, spec, agentId, outcome);
        launch();
      };
      // Once the signal has aborted, a spec still queued is never spawned: spawning it only to
      // cancel it at once cost a journal, an engine message and an agent record each (a Ctrl-C
      // with 18,000 of a 20,000-task data set queued took seconds). Checked only here, where a
      // queued spec would start: every running agent settles after the abort and calls this.
      // Results not kept, the rest of the source is not even built.
      const skipQueued = (): void => {
        if (keep) {
          const error = cancelledError(abortReason(options.signal));
          for (let taken = take(); taken !== undefined; taken = take()) {
            record(next++, taken.spec, '', failedOutcome('', 'cancelled', error));
          }
        } else if (!exhausted) {
          exhausted = true;
          try {
            source.return?.();
          } catch (error) {
            failure = { error };
          }
        }
        finishIfDone();
      };
      const launch = (): void => {
        if (options.signal?.aborted) {
          skipQueued();
          return;
        }
        while (running < concurrency) {
          const taken = take();
          if (taken === undefined) break;
          const { spec } = taken;
          const index = next++;
          running += 1;
          let handle: AgentHandle;
          try {
            const { agent, ...spawnOptions } = spec;
            handle = supervisor.spawn(agent, {
              ...spawnOptions,
              ...(options.signal ? { signal: options.signal } : {}),
            });
          } catch (error) {
            // A spec refused at spawn (a wrong-shaped option) is its result, not a rejection: thrown
            // from here it rejected all() once and left it pending for ever after, unhandled.
            queueMicrotask(() =>
              settle(index, spec, '', failedOutcome('', 'invalid_request', serializeError(error))),
            );
            continue;
          }
          if (keep) this.handles[index] = handle;
          void handle.result.then((outcome) => settle(index, spec, handle.id, outcome));
        }
        finishIfDone();
      };
      launch();
    });
    // A source that throws rejects all(); a caller that only iterates sees it there too.
    this.#all.catch(() => {});
  }

  /**
   * Every result, in input order, once all agents have ended. Rejects only when the specs'
   * iterable throws while a spec is taken from it (after the agents already spawned have ended).
   */
  all(): Promise<FanOutResult[]> {
    return this.#all;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FanOutResult> {
    // Not kept (keepResults: false), only refused specs are here: yielded as they are refused.
    let yielded = 0;
    for (;;) {
      const result = this.#results[yielded];
      if (result) {
        yielded += 1;
        yield result;
        continue;
      }
      if (this.#done) {
        await this.#all;
        return;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }
}
