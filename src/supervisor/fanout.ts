/** Fan-out: many agents, results streamed as they finish, every partial result kept. */
import type { AgentDefinition } from '../definition/types.ts';
import { serializeError } from '../errors.ts';
import { failedOutcome } from '../loop/outcome.ts';
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
  /** Aborting it cancels every agent of the fan-out. */
  readonly signal?: AbortSignal;
}

/** One finished agent of a fan-out. */
export interface FanOutResult {
  /** Position of the spec in the input. */
  readonly index: number;
  readonly spec: SpawnSpec;
  /** '' when the spec was refused at spawn (`invalid_request`): no agent was made for it. */
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
    this.#total = specs.length;
    const concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
    let next = 0;
    let running = 0;
    let finished = 0;
    this.#all = new Promise((resolve) => {
      if (specs.length === 0) resolve([]);
      const launch = (): void => {
        while (running < concurrency && next < specs.length) {
          const index = next++;
          const spec = specs[index];
          if (!spec) continue;
          running += 1;
          const settle = (agentId: string, outcome: AgentOutcome): void => {
            running -= 1;
            finished += 1;
            this.#results.push({ index, spec, agentId, outcome });
            for (const wake of this.#waiters.splice(0)) wake();
            if (finished === specs.length) {
              resolve([...this.#results].sort((a, b) => a.index - b.index));
            } else {
              launch();
            }
          };
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
            queueMicrotask(() => settle('', failedOutcome('', 'invalid_request', serializeError(error))));
            continue;
          }
          this.handles[index] = handle;
          void handle.result.then((outcome) => settle(handle.id, outcome));
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
