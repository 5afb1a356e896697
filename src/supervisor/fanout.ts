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
   * events, as `troupe fanout` does): nothing of an agent is kept once it ends, `handles` stays
   * empty, `all()` resolves to `[]` once every agent has ended, and `for await` yields nothing.
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

/** A running fan-out: `for await` yields results in completion order; `all()` gives them in input order. */
export class FanOut implements AsyncIterable<FanOutResult> {
  readonly #results: FanOutResult[] = [];
  readonly #waiters: (() => void)[] = [];
  readonly #all: Promise<FanOutResult[]>;
  readonly #total: number;
  /** Handles of the agents spawned so far, in input order (sparse until spawned). */
  readonly handles: AgentHandle[] = [];

  /** @internal */
  constructor(supervisor: Spawner, specs: readonly SpawnSpec[], options: FanOutOptions) {
    const keep = options.keepResults !== false;
    // Results the iterator yields: none when they are not kept.
    this.#total = keep ? specs.length : 0;
    const concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
    let next = 0;
    let running = 0;
    let finished = 0;
    this.#all = new Promise((resolve) => {
      if (specs.length === 0) resolve([]);
      const record = (index: number, spec: SpawnSpec, agentId: string, outcome: AgentOutcome): void => {
        finished += 1;
        if (!keep) return;
        this.#results.push({ index, spec, agentId, outcome });
        for (const wake of this.#waiters.splice(0)) wake();
      };
      const settle = (index: number, spec: SpawnSpec, agentId: string, outcome: AgentOutcome): void => {
        running -= 1;
        record(index, spec, agentId, outcome);
        if (finished === specs.length) resolve([...this.#results].sort((a, b) => a.index - b.index));
        else launch();
      };
      // Once the signal has aborted, a spec still queued is never spawned: spawning it only to
      // cancel it at once cost a journal, an engine message and an agent record each (a Ctrl-C
      // with 18,000 of a 20,000-task data set queued took seconds). Checked only here, where a
      // queued spec would start: every running agent settles after the abort and calls this.
      const skipQueued = (): void => {
        const error = cancelledError(abortReason(options.signal));
        while (next < specs.length) {
          const index = next++;
          const spec = specs[index];
          if (spec) record(index, spec, '', failedOutcome('', 'cancelled', error));
        }
        if (finished === specs.length) resolve([...this.#results].sort((a, b) => a.index - b.index));
      };
      const launch = (): void => {
        if (options.signal?.aborted) {
          skipQueued();
          return;
        }
        while (running < concurrency && next < specs.length) {
          const index = next++;
          const spec = specs[index];
          if (!spec) continue;
          running += 1;
          const { agent, ...spawnOptions } = spec;
          let handle: AgentHandle;
          try {
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
      };
      launch();
    });
  }

  /** Every result, in input order, once all agents have ended. Never rejects. */
  all(): Promise<FanOutResult[]> {
    return this.#all;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FanOutResult> {
    let yielded = 0;
    while (yielded < this.#total) {
      const result = this.#results[yielded];
      if (result) {
        yielded += 1;
        yield result;
        continue;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }
}
