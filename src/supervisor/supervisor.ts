/**
 * The Supervisor: runs agents as actors in worker threads, routes `complete_task` and
 * `wait_for_instruction`, shares provider limits across threads and restarts the agents of a
 * thread that died from their journals.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { EventEmitter } from 'eventemitter3';
import type { AgentDefinition } from '../definition/types.ts';
import { describeValue, type SerializedError, SystemError, serializeError, UserError } from '../errors.ts';
import type { AgentLimits, AgentOutcome, FailureReason } from '../loop/types.ts';
import type { ActorSpec, HostEventMessage, SupervisorCallbackApi } from '../protocol/messages.ts';
import { SIMULATED_FALLBACK_WARNING, warnSimulatedFallback } from '../providers/environment.ts';
import type { Usage } from '../providers/types.ts';
import { SUPERVISOR_EVENT_NAMES } from '../scaleout/events.ts';
import { RedisSupervisor } from '../scaleout/redis-supervisor.ts';
import { compileSchema, describeProblems, type SchemaValidator } from '../tools/schema.ts';
import type { ToolOutcome } from '../tools/types.ts';
import { Admission } from './admission.ts';
import { AdmissionServer } from './admission-server.ts';
import { AgentHandle } from './agent-handle.ts';
import { loadDefinitions } from './definitions.ts';
import type { SupervisorEvents } from './events.ts';
import { FanOut, type FanOutOptions, type SpawnSpec } from './fanout.ts';
import type { HostRecord } from './host-pool.ts';
import { HostPool, type HostPool as HostPoolType } from './host-pool.ts';
import { InboxServer } from './inbox-server.ts';
import { Mailbox } from './mailbox.ts';
import {
  type PreparedSupervisorOptions,
  prepareSupervisorOptions,
  type SupervisorOptions,
} from './options.ts';
import { ORCHESTRATION_TOOLS, runOrchestrationTool } from './orchestration.ts';
import { actorSpec, type RecordSpec } from './record-spec.ts';
import { rollUpUsage } from './usage-tree.ts';

/** Options of one spawn. */
export interface SpawnOptions {
  readonly task: string;
  /** Context sections placed before the task, in order. */
  readonly context?: readonly string[];
  /** Id of the agent that spawned this one (set by orchestration tools). */
  readonly parent?: string;
  /** Caller data carried into events, journals and results. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Aborting it cancels the agent. */
  readonly signal?: AbortSignal;
  /** Provider name. @default the supervisor's defaultProvider */
  readonly provider?: string;
  /** Model. @default the definition's model, else the supervisor's defaultModel */
  readonly model?: string;
  readonly limits?: AgentLimits;
  /** Agent id. @default a random UUID */
  readonly id?: string;
  /**
   * Continue the agent from its journal (`journalDir/<id>.jsonl`) when that journal has events,
   * e.g. to finish the agents of an interrupted run; finished tool calls are not run again.
   * @default false
   */
  readonly resume?: boolean;
}

const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

/** @internal Supervisor-side state of one agent. */
export interface AgentRecord {
  readonly id: string;
  readonly spec: RecordSpec;
  readonly handle: AgentHandle;
  readonly settle: (outcome: AgentOutcome) => void;
  readonly mailbox: Mailbox;
  readonly children: string[];
  state: 'queued' | 'running' | 'ended';
  host: HostRecord | undefined;
  restarts: number;
  /** The accepted `complete_task` result, once there is one. */
  completion: { value: unknown } | undefined;
  cancelReason: string | undefined;
  cancelTimer: NodeJS.Timeout | undefined;
  outcome: AgentOutcome | undefined;
  treeUsage: Usage;
  treeCostUsd: number;
  readonly removeAbortListener: () => void;
}

/** Runs agents as actors in worker threads. */
export class Supervisor extends EventEmitter<SupervisorEvents> {
  readonly #options: PreparedSupervisorOptions;
  readonly #agents = new Map<string, AgentRecord>();
  readonly #queue: AgentRecord[] = [];
  readonly #admission: Admission;
  readonly #pausedUntil = new Map<string, number>();
  readonly #schemas = new Map<string, SchemaValidator>();
  #pool: HostPoolType | undefined;
  readonly #remote: RedisSupervisor | undefined;
  #definitions: Map<string, AgentDefinition> | undefined;
  #starting: Promise<void> | undefined;
  #closed = false;
  #announced = false;
  #closing: Promise<void> | undefined;
  #scheduleQueued = false;

  constructor(options: SupervisorOptions = {}) {
    super();
    const backend = options.backend ?? 'threads';
    if (backend !== 'threads' && backend !== 'redis') {
      throw new UserError(
        'invalid_option',
        `Expected \`backend\` to be 'threads' or 'redis', got ${describeValue(backend)}`,
        {
          option: 'backend',
        },
      );
    }
    if (backend === 'redis') {
      // Same API, other engine: agents are BullMQ jobs run by `troupe worker` processes.
      const remote = new RedisSupervisor(options);
      this.#remote = remote;
      this.#options = remote.options;
      for (const name of SUPERVISOR_EVENT_NAMES) {
        remote.on(name, (...args: unknown[]) =>
          (this.emit as (event: string, ...rest: unknown[]) => boolean)(name, ...args),
        );
      }
    } else {
      this.#options = prepareSupervisorOptions(options);
    }
    this.#admission = new Admission(this.#remote ? {} : this.#options.limits, (provider, retryAfterMs) =>
      this.emit('provider:backoff', { provider, retryAfterMs }),
    );
  }

  /** The validated options. */
  get options(): PreparedSupervisorOptions {
    return this.#options;
  }

  /** Which engine runs the agents. */
  get backend(): 'threads' | 'redis' {
    return this.#remote ? 'redis' : 'threads';
  }

  /** Agents known to the supervisor (queued, running or ended, until close()). */
  get agentCount(): number {
    return this.#remote ? this.#remote.agentCount : this.#agents.size;
  }

  /** Loads definitions and starts the threads (or connects to Redis). Called by the first spawn. */
  start(): Promise<void> {
    this.#announceSimulated();
    if (this.#remote) return this.#remote.start();
    this.#starting ??= this.#start();
    return this.#starting;
  }

  /** Says that the simulated model answers: once per supervisor as an event, once per process as a warning. */
  #announceSimulated(): void {
    if (this.#announced || !this.#options.simulatedFallback) return;
    this.#announced = true;
    this.emit('provider:simulated', { provider: 'simulated', message: SIMULATED_FALLBACK_WARNING });
    warnSimulatedFallback();
  }

  async #start(): Promise<void> {
    this.#definitions = await loadDefinitions(this.#options);
    if (this.#closed) return;
    const hostTools = [
      ...Object.entries(this.#options.hostTools).map(([name, tool]) => ({
        name,
        description: tool.description,
        parameters: tool.parameters,
        readOnly: tool.readOnly ?? false,
      })),
      ...ORCHESTRATION_TOOLS,
    ];
    const admissionKeys = this.#admission.keys;
    const pool = new HostPool({
      threads: this.#options.threads,
      resourceLimits: this.#options.resourceLimits,
      heartbeatIntervalMs: this.#options.heartbeatIntervalMs,
      heartbeatTimeoutMs: this.#options.heartbeatTimeoutMs,
      execArgv: this.#options.execArgv,
      config: {
        providers: this.#options.providers,
        admissionKeys,
        toolModules: this.#options.toolModules,
        hostTools,
        journalDir: this.#options.journalDir,
        fsync: this.#options.fsync,
        cwd: this.#options.cwd,
      },
      callbacks: this.#callbacks(),
      serveAdmission: (_host, port) => new AdmissionServer(this.#admission, admissionKeys, port),
      serveInbox: (_host, port) => new InboxServer(port, (agentId) => this.#runningMailbox(agentId)),
      onMessage: (host, message) => this.#onHostMessage(host, message),
    });
    this.#pool = pool;
    pool.on('host:started', (host) => this.emit('thread:started', { hostId: host.id }));
    pool.on('host:died', (host, cause) => this.#onHostDied(host, cause));
    await Promise.all(Array.from({ length: this.#options.threads }, () => pool.startHost()));
    this.#schedule();
  }

  /**
   * Spawns an agent by definition name (or a definition object) and returns its handle at once.
   * The agent is queued until a thread has room. A spawn that cannot run (unknown agent, closed
   * supervisor) settles `result` as Failed with reason `invalid_request`.
   */
  spawn(agent: string | AgentDefinition, options: SpawnOptions): AgentHandle {
    this.#announceSimulated();
    if (this.#remote) return this.#remote.spawn(agent, options);
    const id = options.id ?? randomUUID();
    if (this.#agents.has(id))
      throw new UserError('duplicate_agent_id', `An agent with id ${id} already exists`, { agentId: id });
    const name = typeof agent === 'string' ? agent : agent.name;
    let settle: (outcome: AgentOutcome) => void = () => {};
    const result = new Promise<AgentOutcome>((resolve) => {
      settle = resolve;
    });
    const handle = new AgentHandle(id, name, options.parent, result, {
      send: (text) => this.#send(id, text),
      cancel: (reason) => this.#cancel(id, reason),
    });
    const parent = options.parent === undefined ? undefined : this.#agents.get(options.parent);
    const signal = options.signal;
    const onAbort = (): void => this.#cancel(id, abortReason(signal));
    signal?.addEventListener('abort', onAbort, { once: true });
    const record: AgentRecord = {
      id,
      spec: {
        agentId: id,
        parentId: options.parent,
        depth: parent ? parent.spec.depth + 1 : 0,
        definition: typeof agent === 'string' ? undefined : agent,
        task: options.task,
        context: options.context ?? [],
        metadata: options.metadata ?? {},
        provider: options.provider ?? this.#options.defaultProvider,
        model: options.model ?? '',
        limits: options.limits ?? {},
        resume: options.resume ?? false,
      },
      handle,
      settle,
      mailbox: new Mailbox(),
      children: [],
      state: 'queued',
      host: undefined,
      restarts: 0,
      completion: undefined,
      cancelReason: undefined,
      cancelTimer: undefined,
      outcome: undefined,
      treeUsage: ZERO_USAGE,
      treeCostUsd: 0,
      removeAbortListener: () => signal?.removeEventListener('abort', onAbort),
    };
    this.#agents.set(id, record);
    parent?.children.push(id);
    this.emit('agent:spawned', {
      agentId: id,
      parentId: options.parent,
      agent: name,
      task: options.task,
      metadata: record.spec.metadata,
    });
    if (this.#closed) {
      this.#fail(
        record,
        'invalid_request',
        new UserError('supervisor_closed', 'The supervisor is closed').toJSON(),
      );
      return handle;
    }
    if (signal?.aborted) {
      this.#fail(record, 'cancelled', cancelledError(abortReason(signal)));
      return handle;
    }
    this.start().then(
      () => this.#enqueue(record, typeof agent === 'string' ? agent : undefined),
      (error: unknown) => this.#fail(record, 'crashed', serializeError(error)),
    );
    return handle;
  }

  /** Runs many agents; iterate it for results as they finish, or await `all()` for them in order. */
  fanOut(specs: Iterable<SpawnSpec>, options: FanOutOptions = {}): FanOut {
    return new FanOut(this, [...specs], options);
  }

  /** The handle of a known agent. */
  handle(agentId: string): AgentHandle | undefined {
    if (this.#remote) return this.#remote.handle(agentId);
    return this.#agents.get(agentId)?.handle;
  }

  /** Usage of an agent and every agent below it, once they have ended. */
  treeUsage(agentId: string): { usage: Usage; costUsd: number } | undefined {
    if (this.#remote) return this.#remote.treeUsage(agentId);
    const record = this.#agents.get(agentId);
    return record && { usage: record.treeUsage, costUsd: record.treeCostUsd };
  }

  /** Memory of every thread after a GC (when threads run with --expose-gc). */
  async measureThreads(): Promise<{ heapUsed: number; external: number; agents: number }[]> {
    if (this.#remote) return this.#remote.measureThreads();
    await this.start();
    return this.#pool ? this.#pool.measure() : [];
  }

  /** Cancels every agent (they end Failed(cancelled)), then stops the threads. Idempotent. */
  close(): Promise<void> {
    if (this.#remote) return this.#remote.close();
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const open = [...this.#agents.values()].filter((r) => r.state !== 'ended');
    for (const record of open) this.#cancel(record.id, 'supervisor closed');
    await Promise.all(open.map((r) => r.handle.result));
    // Threads still starting are stopped, not waited for: closing during start-up (a Ctrl-C right
    // after `troupe fanout`) must not wait seconds for threads that will never run an agent.
    await this.#pool?.close(this.#options.graceMs);
    if (this.#starting) await this.#starting.catch(() => {});
    await this.#pool?.close(this.#options.graceMs);
    this.#admission.close();
    for (const record of this.#agents.values()) {
      record.mailbox.abandon();
      if (record.cancelTimer) clearTimeout(record.cancelTimer);
    }
    if (this.#options.ownsJournalDir) rmSync(this.#options.journalDir, { recursive: true, force: true });
  }

  #enqueue(record: AgentRecord, name: string | undefined): void {
    if (record.state !== 'queued') return;
    if (name !== undefined) {
      const definition = this.#definitions?.get(name);
      if (!definition) {
        const known = [...(this.#definitions?.keys() ?? [])].sort().join(', ');
        this.#fail(
          record,
          'invalid_request',
          new UserError('unknown_agent', `No agent definition named \`${name}\`. Known: ${known}`, {
            agent: name,
          }).toJSON(),
        );
        return;
      }
      record.spec.definition = definition;
    }
    if (!(record.spec.provider in this.#options.providers)) {
      this.#fail(
        record,
        'invalid_request',
        new UserError('unknown_provider', `No provider named \`${record.spec.provider}\``, {
          provider: record.spec.provider,
        }).toJSON(),
      );
      return;
    }
    if (record.spec.model === '') {
      const model = record.spec.definition?.model ?? 'default';
      record.spec.model = model === 'default' || model === 'inherit' ? this.#options.defaultModel : model;
    }
    this.#queue.push(record);
    this.#scheduleSoon();
  }

  /**
   * Runs one scheduling pass after the current microtasks: spawns arrive one microtask each (after
   * `start()`), and a pass sends each host one message for all the agents it places there.
   */
  #scheduleSoon(): void {
    if (this.#scheduleQueued) return;
    this.#scheduleQueued = true;
    queueMicrotask(() => {
      this.#scheduleQueued = false;
      this.#schedule();
    });
  }

  #schedule(): void {
    const pool = this.#pool;
    if (!pool || this.#closed) return;
    const placed: { record: AgentRecord; host: HostRecord; resumed: boolean }[] = [];
    const batches = new Map<HostRecord, ActorSpec[]>();
    // Taken once: `pool.hosts` builds a new array, and no host starts or dies during the pass.
    const hosts = pool.hosts;
    while (this.#queue.length > 0) {
      const host = this.#pickHost(hosts);
      if (!host) break;
      const record = this.#queue.shift();
      if (record?.state !== 'queued') continue;
      record.state = 'running';
      record.host = host;
      host.agents.add(record.id);
      const spec = actorSpec(record.spec);
      const batch = batches.get(host);
      if (batch) batch.push(spec);
      else batches.set(host, [spec]);
      placed.push({ record, host, resumed: spec.resume });
    }
    // Every spawn is posted before any listener of `agent:started` can post a cancel for it.
    for (const [host, specs] of batches) {
      pool.spawnMany(host, specs).catch(() => {
        // The host died: its death handler restarts or fails these agents.
      });
    }
    for (const { record, host, resumed } of placed) {
      this.emit('agent:started', { ...this.#ref(record), hostId: host.id, resumed });
    }
  }

  #runningMailbox(agentId: string): Mailbox | undefined {
    const record = this.#agents.get(agentId);
    return record && record.state !== 'ended' ? record.mailbox : undefined;
  }

  #pickHost(hosts: readonly HostRecord[]): HostRecord | undefined {
    const limit = this.#options.isolation === 'thread' ? 1 : this.#options.maxAgentsPerThread;
    let best: HostRecord | undefined;
    for (const host of hosts) {
      if (host.agents.size >= limit) continue;
      if (!best || host.agents.size < best.agents.size) best = host;
    }
    return best;
  }

  #ref(record: AgentRecord): { agentId: string; parentId: string | undefined; agent: string } {
    return { agentId: record.id, parentId: record.spec.parentId, agent: record.handle.agent };
  }

  #onHostMessage(host: HostRecord, message: HostEventMessage): void {
    switch (message.type) {
      case 'signals':
        for (const signal of message.signals) {
          const record = this.#agents.get(signal.agentId);
          if (!record) continue;
          const ref = this.#ref(record);
          switch (signal.type) {
            case 'round': {
              const event = { ...ref, round: signal.round, estimatedTokens: signal.estimatedTokens };
              this.emit('agent:round', event);
              record.handle.emit('round', event);
              break;
            }
            case 'tool_call': {
              const event = { ...ref, round: signal.round, tool: signal.name, ok: signal.ok };
              this.emit('agent:tool', event);
              record.handle.emit('tool', event);
              break;
            }
            case 'receipt': {
              const { type: _type, agentId: _agentId, ...rest } = signal;
              const event = { ...ref, ...rest };
              this.emit('agent:usage', event);
              record.handle.emit('usage', event);
              break;
            }
            case 'text': {
              const event = { ...ref, text: signal.text };
              this.emit('agent:text', event);
              record.handle.emit('text', event);
              break;
            }
            case 'waiting':
              this.emit('agent:waiting', ref);
              record.handle.emit('waiting', ref);
              break;
            case 'instructed': {
              const event = { ...ref, text: signal.text };
              this.emit('agent:instructed', event);
              record.handle.emit('instructed', event);
              break;
            }
          }
        }
        return;
      case 'ended': {
        const record = this.#agents.get(message.agentId);
        if (record && record.host === host) this.#finish(record, message.outcome);
        return;
      }
      case 'host_error':
      case 'ready':
        return;
    }
  }

  #onHostDied(host: HostRecord, cause: SerializedError): void {
    const victims = [...host.agents].map((id) => this.#agents.get(id)).filter((r) => r !== undefined);
    host.agents.clear();
    this.emit('thread:crashed', { hostId: host.id, cause, agents: victims.map((r) => r.id) });
    for (const record of victims) {
      if (record.state === 'ended') continue;
      record.mailbox.abandon();
      record.host = undefined;
      if (record.completion) {
        this.#finish(record, completedOutcome(record, record.completion.value));
      } else if (record.cancelReason !== undefined) {
        this.#fail(record, 'cancelled', cancelledError(record.cancelReason));
      } else if (record.restarts >= this.#options.restart.maxRetries || this.#closed) {
        this.#fail(record, 'crashed', {
          ...cause,
          message: `Thread crashed and the restart cap (${this.#options.restart.maxRetries}) was reached: ${cause.message}`,
        });
      } else {
        record.restarts += 1;
        record.state = 'queued';
        record.spec.resume = true;
        const event = { ...this.#ref(record), restart: record.restarts, cause };
        this.emit('agent:restarted', event);
        record.handle.emit('restarted', event);
        const { baseDelayMs, maxDelayMs } = this.#options.restart;
        const delay = Math.min(maxDelayMs, baseDelayMs * 2 ** (record.restarts - 1));
        setTimeout(() => {
          if (record.state !== 'queued') return;
          this.#queue.unshift(record);
          this.#schedule();
        }, delay);
      }
    }
    if (this.#closed || !this.#pool) return;
    this.#pool.startHost().then(
      (replacement) => {
        this.emit('thread:respawned', { hostId: replacement.id });
        this.#schedule();
      },
      () => {
        // A replacement that dies while starting is reported by its own death event.
      },
    );
  }

  #send(agentId: string, text: string): void {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended') {
      throw new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId });
    }
    record.mailbox.send(text);
  }

  #cancel(agentId: string, reason: string): void {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended' || record.cancelReason !== undefined) return;
    record.cancelReason = reason;
    for (const child of record.children) this.#cancel(child, `parent cancelled: ${reason}`);
    if (record.state === 'queued' || !record.host) {
      this.#fail(record, 'cancelled', cancelledError(reason));
      return;
    }
    const host = record.host;
    record.mailbox.abandon();
    this.#pool?.call(host, (api) => api.cancel(agentId, reason)).catch(() => {});
    record.cancelTimer = setTimeout(() => {
      if (record.state === 'ended' || !host.alive) return;
      void this.#pool?.terminate(
        host,
        new SystemError(
          'cancel_timeout',
          `Agent ${agentId} did not stop within ${this.#options.graceMs} ms of cancel`,
          {
            agentId,
            hostId: host.id,
          },
        ).toJSON(),
      );
    }, this.#options.graceMs);
    record.cancelTimer.unref();
  }

  #fail(record: AgentRecord, reason: FailureReason, error: SerializedError): void {
    this.#finish(record, {
      status: 'failed',
      agentId: record.id,
      reason,
      error,
      usage: ZERO_USAGE,
      costUsd: 0,
      rounds: 0,
    });
  }

  #finish(record: AgentRecord, outcome: AgentOutcome): void {
    if (record.state === 'ended') return;
    const wasQueued = record.state === 'queued';
    record.state = 'ended';
    record.outcome = outcome;
    if (wasQueued) {
      const index = this.#queue.indexOf(record);
      if (index >= 0) this.#queue.splice(index, 1);
    }
    record.host?.agents.delete(record.id);
    record.host = undefined;
    if (record.cancelTimer) clearTimeout(record.cancelTimer);
    record.removeAbortListener();
    record.mailbox.abandon();
    rollUpUsage(this.#agents, record, outcome.usage, outcome.costUsd);
    const event = { ...this.#ref(record), outcome };
    this.emit(outcome.status === 'completed' ? 'agent:completed' : 'agent:failed', event);
    record.handle.emit('ended', event);
    record.settle(outcome);
    this.#schedule();
  }

  #validateResult(record: AgentRecord, value: unknown): string | undefined {
    const definition = record.spec.definition;
    const schema = definition?.outputSchema;
    if (!definition || !schema) return undefined;
    const key = definition.path + definition.name;
    let validate = this.#schemas.get(key);
    if (!validate) {
      validate = compileSchema(schema, `the outputSchema of ${definition.name}`);
      this.#schemas.set(key, validate);
    }
    const problems = validate(value);
    return problems.length === 0 ? undefined : describeProblems(problems);
  }

  #callbacks(): SupervisorCallbackApi {
    return {
      reportRateLimit: (key, retryAfterMs) => {
        const until = Date.now() + retryAfterMs;
        if (until <= (this.#pausedUntil.get(key) ?? 0)) return;
        this.#pausedUntil.set(key, until);
        if (this.#admission.keys.includes(key)) this.#admission.backoff(key, retryAfterMs);
        else this.emit('provider:backoff', { provider: key, retryAfterMs });
        for (const host of this.#pool?.hosts ?? []) {
          this.#pool?.call(host, (api) => api.pauseProvider(key, until)).catch(() => {});
        }
      },
      completeTask: async (agentId, result) => {
        const record = this.#agents.get(agentId);
        if (!record || record.state === 'ended')
          return { accepted: false, message: 'The agent is not running.' };
        if (record.cancelReason !== undefined)
          return { accepted: false, message: 'The agent was cancelled.' };
        if (record.completion) {
          return {
            accepted: false,
            message: 'complete_task was already called: the task is complete. Stop now.',
          };
        }
        const problems = this.#validateResult(record, result);
        if (problems)
          return { accepted: false, message: `The result does not match the output schema: ${problems}` };
        record.completion = { value: result };
        return { accepted: true };
      },
      callHostTool: async (agentId, name, args) => this.#callHostTool(agentId, name, args),
    };
  }

  async #callHostTool(
    agentId: string,
    name: string,
    args: Readonly<Record<string, unknown>>,
  ): Promise<ToolOutcome> {
    const record = this.#agents.get(agentId);
    if (!record) return { ok: false, text: `${name} failed: unknown agent ${agentId}` };
    const controller = new AbortController();
    try {
      const userTool = this.#options.hostTools[name];
      if (userTool) {
        const outcome = await userTool.execute({ ...args }, { agentId, signal: controller.signal });
        return typeof outcome === 'string' ? { ok: true, text: outcome } : outcome;
      }
      return await runOrchestrationTool(name, args, {
        caller: record,
        agents: this.#agents,
        maxDepth: this.#options.maxDepth,
        maxChildren: this.#options.maxChildren,
        spawn: (agent, options) => this.spawn(agent, { ...options, parent: agentId }),
      });
    } catch (error) {
      return { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
}

function completedOutcome(record: AgentRecord, value: unknown): AgentOutcome {
  return {
    status: 'completed',
    agentId: record.id,
    answer: JSON.stringify(value),
    result: value,
    usage: ZERO_USAGE,
    costUsd: 0,
    rounds: 0,
  };
}

function cancelledError(reason: string): SerializedError {
  return new SystemError('cancelled', `Cancelled: ${reason}`, { reason }).toJSON();
}

function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'aborted' : String(reason);
}
