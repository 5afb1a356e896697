/**
 * The Supervisor: spawns agents and owns what is the same whatever runs them (records, handles,
 * the event stream, fan-out, orchestration, result validation, usage roll-up, instructions,
 * cancellation and close). An engine (src/engines/) runs them: worker threads of this process
 * (`backend: 'threads'`) or `troupe worker` processes through Redis (`backend: 'redis'`). This file
 * is the public API; the agents' lifecycle is in agents.ts.
 */
import { resolve } from 'node:path';
import { EventEmitter } from 'eventemitter3';
import type { AgentDefinition } from '../definition/types.ts';
import type { Backend, EngineDescription } from '../engines/engine.ts';
import type { AuditEvent } from '../journal/events.ts';
import { readJournal } from '../journal/reader.ts';
import type { ApprovalRequest } from '../protocol/approvals.ts';
import type { HostStats } from '../protocol/messages.ts';
import type { Usage } from '../providers/types.ts';
import { startedOf } from '../replay/recording.ts';
import { AgentTracing } from '../telemetry/agent-tracing.ts';
import type { AgentHandle } from './agent-handle.ts';
import { Agents } from './agents.ts';
import type { ApproveOptions, DenyOptions } from './approvals.ts';
import type { SupervisorEvents } from './events.ts';
import { FanOut, type FanOutOptions, type SpawnSpec } from './fanout.ts';
import {
  type PreparedSupervisorOptions,
  prepareSupervisorOptions,
  type SupervisorOptions,
} from './options.ts';
import { type RecordedJournal, siblingJournals } from './replay.ts';
import type { ReplayOptions } from './replay-options.ts';
import type { RunUsage } from './run-budget.ts';
import { AgentSession, DEFAULT_SESSION_TASK, type SessionOptions } from './session.ts';
import type { SpawnOptions } from './spawn-options.ts';

/**
 * Runs agents as actors: spawn them one by one or fan out many, send them instructions, cancel
 * them, and read one typed event stream for all of them.
 *
 * @example
 * const supervisor = new Supervisor({ threads: 2 });
 * const handle = supervisor.spawn('worker', { task: 'Review src/a.ts.' });
 * const outcome = await handle.result;
 * await supervisor.close();
 */
export class Supervisor extends EventEmitter<SupervisorEvents> {
  readonly #options: PreparedSupervisorOptions;
  /** Undefined when `tracing: false`. */
  readonly #tracing: AgentTracing | undefined;
  readonly #agents: Agents;

  constructor(options: SupervisorOptions = {}) {
    super();
    this.#options = prepareSupervisorOptions(options);
    this.#tracing = this.#options.tracing === false ? undefined : new AgentTracing(this.#options.tracing);
    this.#agents = new Agents(this.#options, this, this.#tracing);
  }

  override on<T extends EventEmitter.EventNames<SupervisorEvents>>(
    event: T,
    fn: EventEmitter.EventListener<SupervisorEvents, T>,
    context?: unknown,
  ): this {
    this.#agents.listen(event);
    return super.on(event, fn, context);
  }

  override addListener<T extends EventEmitter.EventNames<SupervisorEvents>>(
    event: T,
    fn: EventEmitter.EventListener<SupervisorEvents, T>,
    context?: unknown,
  ): this {
    this.#agents.listen(event);
    return super.addListener(event, fn, context);
  }

  override once<T extends EventEmitter.EventNames<SupervisorEvents>>(
    event: T,
    fn: EventEmitter.EventListener<SupervisorEvents, T>,
    context?: unknown,
  ): this {
    this.#agents.listen(event);
    return super.once(event, fn, context);
  }

  /** The validated options. */
  get options(): PreparedSupervisorOptions {
    return this.#options;
  }

  /** Which engine runs the agents. */
  get backend(): Backend {
    return this.#agents.engine.backend;
  }

  /**
   * Agents the supervisor holds: pending, running, and ended ones it still keeps (the last
   * `retainEndedAgents` to end, plus ended subagents and ancestors of agents still running).
   */
  get agentCount(): number {
    return this.#agents.records.size;
  }

  /**
   * What every agent has spent so far (tokens, USD), against `runLimits`, and whether they are
   * spent. With `runLimits` each model request counts as it ends; without, each agent's usage
   * counts when the agent ends.
   */
  get runUsage(): RunUsage {
    return this.#agents.budget.usage;
  }

  /** Loads definitions and starts the engine (threads, or the Redis connection). Called by the first spawn. */
  start(): Promise<void> {
    return this.#agents.start();
  }

  /**
   * Spawns an agent by definition name (or a definition object) and returns its handle at once.
   * The agent waits until its engine has room. A spawn that cannot run (unknown agent, closed
   * supervisor) settles `result` as Failed with reason `invalid_request`. Throws UserError
   * `invalid_option` for options of the wrong shape, `duplicate_agent_id`, and
   * `spawn_input_too_large` when task, context and metadata are over `MAX_SPAWN_INPUT_BYTES` (4 MiB of UTF-8).
   */
  spawn(agent: string | AgentDefinition, options: SpawnOptions): AgentHandle {
    return this.#agents.spawn(agent, options, undefined);
  }

  /**
   * Starts a session with an agent (by definition name, or a definition object): a conversation in
   * which each `send(text)` is a user message answered by one turn of the same projection, as
   * seed 003's session loop does (history, keyed state and budget carry over). It runs on the
   * engine like any agent, is journalled (Started `session: true`, one TurnAnswered per answer),
   * survives a thread restart, and with `resume: true` and the id of an earlier session continues
   * that one from its journal. See {@link AgentSession}.
   *
   * @example
   * const chat = supervisor.session('assistant');
   * console.log((await chat.send('Summarise README.md.')).answer);
   * console.log((await chat.send('Shorter, please.')).answer);
   * await chat.close();
   */
  session(agent: string | AgentDefinition, options: SessionOptions = {}): AgentSession {
    const handle = this.#agents.spawn(
      agent,
      { ...options, task: options.task ?? DEFAULT_SESSION_TASK },
      undefined,
      true,
    );
    // A session continued from its journal in a new supervisor gets the messages it had received
    // again, at their indices (idempotent), so the next message is the next index.
    let received: Promise<void> | undefined;
    return new AgentSession(
      handle,
      async (text) => {
        if (options.resume === true) {
          received ??= this.#agents.redeliver(handle.id);
          await received;
        }
        return this.instruct(handle.id, text);
      },
      (turn, reason) => this.#agents.cancelTurn(handle.id, turn, reason),
    );
  }

  /**
   * Replays a recorded agent on the current version of its definition (or `options.agent`): it
   * gets the recorded task, context and metadata, and its tool calls are answered from its journal
   * by the rule of src/replay/replay-calls.ts (a recorded call gets its recorded result and nothing
   * runs; a call the recording lacks runs only when its tool is read-only, else it is refused). The
   * instructions it received are sent again; a replayed orchestrator's subagents are replayed from
   * their own journals (beside a journal file, or `options.journals`). Returns its handle, like
   * {@link spawn}; it is journalled like any agent, its Started event naming what it replays.
   *
   * A journal given as a path is read here, synchronously. Throws what reading it throws
   * (SystemError `journal_not_found`, `journal_not_started`).
   *
   * @example
   * const handle = supervisor.replay('.troupe/runs/x/journals/3fa9c1-0.jsonl', { agent: 'grader-v2' });
   * const outcome = await handle.result;
   */
  replay(journal: RecordedJournal, options: ReplayOptions = {}): AgentHandle {
    const events = typeof journal === 'string' ? readJournal(resolve(journal)).events : journal;
    const started = startedOf(events);
    const provider =
      options.provider ?? (started.provider in this.#options.providers ? started.provider : undefined);
    return this.spawn(options.agent ?? started.definition.name, {
      task: started.task,
      context: started.context,
      metadata: options.metadata ?? started.metadata,
      model: options.model ?? started.model,
      ...(provider === undefined ? {} : { provider }),
      limits: options.limits ?? started.limits ?? {},
      ...(options.id === undefined ? {} : { id: options.id }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.resume === undefined ? {} : { resume: options.resume }),
      replay: {
        journal: events,
        of: options.of ?? (typeof journal === 'string' ? resolve(journal) : 'events'),
        ...(options.journals
          ? { journals: options.journals }
          : typeof journal === 'string'
            ? { journals: siblingJournals(journal) }
            : {}),
      },
    });
  }

  /**
   * Runs many agents; iterate it for results as they finish, or await `all()` for them in order.
   * `specs` is read as slots free (see `concurrency`): an array, or a generator that builds each
   * spec only when its agent is about to start.
   */
  fanOut(specs: Iterable<SpawnSpec>, options: FanOutOptions = {}): FanOut {
    const known = Array.isArray(specs) ? specs.length : undefined;
    let counted = 0;
    const counting = function* (): Generator<SpawnSpec> {
      for (const spec of specs) {
        counted += 1;
        yield spec;
      }
    };
    const workflow = this.#tracing?.workflow(known);
    if (!workflow) return new FanOut(this, specs, options);
    const fanOut = new FanOut(
      {
        spawn: (agent, spawnOptions) =>
          this.#agents.spawn(agent, spawnOptions, { context: workflow.context }),
      },
      known === undefined ? counting() : specs,
      options,
    );
    const end = (): void => workflow.end(known ?? counted);
    void fanOut.all().then(end, end);
    return fanOut;
  }

  /**
   * The handle of an agent the supervisor holds (see {@link agentCount}); undefined for an id it
   * never had or has evicted (`retainEndedAgents`). A handle you hold keeps working after that.
   */
  handle(agentId: string): AgentHandle | undefined {
    return this.#agents.records.get(agentId)?.handle;
  }

  /**
   * Usage of an agent and every agent below it, once they have ended; undefined for an id the
   * supervisor does not hold (never had, or evicted: see `retainEndedAgents`).
   */
  treeUsage(agentId: string): { usage: Usage; costUsd: number } | undefined {
    const record = this.#agents.records.get(agentId);
    return record && { usage: record.treeUsage, costUsd: record.treeCostUsd };
  }

  /**
   * Sends an instruction and resolves with its index (0 for the agent's first) once the engine has
   * it (`handle.send` does the same without waiting). Rejects with UserError `agent_not_running`
   * when the agent has ended, `unknown_agent` when the supervisor holds no agent with that id
   * (never spawned here, or evicted: `retainEndedAgents`; an id you chose stays
   * `agent_not_running`), or `instruction_too_large` for a text over `MAX_INSTRUCTION_BYTES` (1 MiB
   * of UTF-8).
   */
  instruct(agentId: string, text: string): Promise<number> {
    return this.#agents.instruct(agentId, text);
  }

  /**
   * Approves the call waiting on `requestId` (from `agent:approval`): it runs. `remember: 'session'`
   * approves later requests of the same rule without asking (not a rule holding a masked secret:
   * see {@link ApproveOptions.remember}). Rejects with UserError
   * `approval_not_pending` when no such request waits (decided, timed out, or its agent ended).
   */
  approve(requestId: string, options?: ApproveOptions): Promise<void> {
    return this.#agents.approvals.approve(requestId, options);
  }

  /** Denies the call waiting on `requestId`; the model sees the denial with `reason`. Rejects like {@link approve}. */
  deny(requestId: string, reason?: string, options?: DenyOptions): Promise<void> {
    return this.#agents.approvals.deny(requestId, reason, options);
  }

  /** Requests waiting for a decision, oldest first (of one agent when `agentId` is given). */
  pendingApprovals(agentId?: string): ApprovalRequest[] {
    return this.#agents.approvals.pending(agentId);
  }

  /** The agent's journal as its engine stores it (a JSONL file, or a Redis Stream); empty when it has none. */
  async journal(agentId: string): Promise<AuditEvent[]> {
    await this.start();
    return this.#agents.engine.journal(agentId);
  }

  /** Where agents run: the engine, and its thread count or its queue and connected workers. */
  describe(): Promise<EngineDescription> {
    return this.#agents.engine.describe();
  }

  /** Memory of every thread after a GC (threads engine; the redis engine's threads are the workers'). */
  async measureThreads(): Promise<HostStats[]> {
    await this.start();
    return this.#agents.engine.measure();
  }
  /** Cancels every agent (they end Failed(cancelled)), then stops the engine. Idempotent. */
  close(): Promise<void> {
    return this.#agents.close();
  }
}
