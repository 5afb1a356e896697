/**
 * The Supervisor: spawns agents and owns what is the same whatever runs them (records, handles,
 * the event stream, fan-out, orchestration, result validation, usage roll-up, instructions,
 * cancellation and close). An engine (src/engines/) runs them: worker threads of this process
 * (`backend: 'threads'`) or `troupe worker` processes through Redis (`backend: 'redis'`).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import type { Context } from '@opentelemetry/api';
import { EventEmitter } from 'eventemitter3';
import { abortReason } from '../abort.ts';
import { hasBlockReferences, resolveAgentBlocks } from '../blocks/resolve.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { createEngine } from '../engines/create-engine.ts';
import type { AgentReport, Backend, Engine, EngineDescription, EngineHost } from '../engines/engine.ts';
import { type SerializedError, serializeError, UserError } from '../errors.ts';
import type { AuditEvent } from '../journal/events.ts';
import { readJournal } from '../journal/reader.ts';
import { cancelledError, completedOutcome, failedOutcome } from '../loop/outcome.ts';
import type { AgentOutcome, FailureReason } from '../loop/types.ts';
import { cachedDefinitionHash, deliverUsage, type UsageRecord, usageRecord } from '../loop/usage-record.ts';
import type { McpServers } from '../mcp/config.ts';
import type { ApprovalRequest } from '../protocol/approvals.ts';
import type { HostStats, OptionalSignal } from '../protocol/messages.ts';
import { SIMULATED_FALLBACK_WARNING, warnSimulatedFallback } from '../providers/environment.ts';
import { prepareModelSettings } from '../providers/model-settings.ts';
import type { Usage } from '../providers/types.ts';
import { startedOf } from '../replay/recording.ts';
import { AgentTracing } from '../telemetry/agent-tracing.ts';
import { emitAgentReport, signalOfEvent } from './agent-events.ts';
import type { AgentHandle } from './agent-handle.ts';
import { type AgentRecord, createRecord, hasEnded } from './agent-record.ts';
import { ApprovalBook, type ApproveOptions, type DenyOptions } from './approvals.ts';
import { loadDefinitions, runMcpServers } from './definitions.ts';
import type { SupervisorEvents } from './events.ts';
import { FanOut, type FanOutOptions, type SpawnSpec } from './fanout.ts';
import { runHostTool } from './host-tools.ts';
import {
  type PreparedSupervisorOptions,
  prepareSupervisorOptions,
  type SupervisorOptions,
  spawnPermissions,
} from './options.ts';
import { ORCHESTRATION_TOOLS } from './orchestration.ts';
import { actorSpec } from './record-spec.ts';
import { childReplaySource, loadReplay, type RecordedJournal, siblingJournals } from './replay.ts';
import type { ReplayOptions } from './replay-options.ts';
import { ResultCheck } from './result-check.ts';
import { AgentSession, DEFAULT_SESSION_TASK, type SessionOptions } from './session.ts';
import type { SpawnOptions } from './spawn-options.ts';
import { resolveSpawn } from './spawn-resolution.ts';
import { traceEngineEvent, traceReport } from './trace-reports.ts';
import { rollUpUsage } from './usage-tree.ts';

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
  readonly #engine: Engine;
  readonly #agents = new Map<string, AgentRecord>();
  readonly #results = new ResultCheck();
  /** Undefined when `tracing: false`. */
  readonly #tracing: AgentTracing | undefined;
  readonly #approvals: ApprovalBook;
  #definitions: Map<string, AgentDefinition> = new Map();
  /** MCP servers every agent may use (the option and `.mcp.json`), known once started. */
  #mcpServers: McpServers = {};
  #starting: Promise<void> | undefined;
  #closed = false;
  #announced = false;
  #closing: Promise<void> | undefined;
  /** The optional signals someone listens for (see {@link signalOfEvent}); the set only grows. */
  readonly #wantedSignals = new Set<OptionalSignal>();
  /** Asks the engine for the signals a new listener of `event` needs. */
  readonly #listen = (event: string | symbol): void => {
    const signal = signalOfEvent(event);
    if (signal === undefined || this.#wantedSignals.has(signal)) return;
    this.#wantedSignals.add(signal);
    this.#engine.wantSignals?.([...this.#wantedSignals]);
  };

  constructor(options: SupervisorOptions = {}) {
    super();
    this.#options = prepareSupervisorOptions(options);
    this.#tracing = this.#options.tracing === false ? undefined : new AgentTracing(this.#options.tracing);
    const userTools = Object.entries(this.#options.hostTools).map(([name, tool]) => ({
      name,
      description: tool.description,
      parameters: tool.parameters,
      readOnly: tool.readOnly ?? false,
      ...(tool.needsApproval === true ? { needsApproval: true } : {}),
    }));
    this.#engine = createEngine(this.#options, {
      host: this.#engineHost(),
      hostTools: [...userTools, ...ORCHESTRATION_TOOLS],
    });
    // The usage sink is fed from the per-request receipts: they must be sent without a listener.
    if (this.#options.usageSink) this.#listen('agent:usage');
    this.#approvals = new ApprovalBook({
      deliver: async (agentId, requestId, decision) => {
        await this.#engine.deliver(agentId, { type: 'approval', requestId, decision });
      },
      listening: (agentId) =>
        this.listenerCount('agent:approval') > 0 ||
        (this.#agents.get(agentId)?.handle.listenerCount('approval') ?? 0) > 0,
      unattended: this.#options.unattended,
      emitApproval: (event) => {
        this.emit('agent:approval', event);
        this.#agents.get(event.agentId)?.handle.emit('approval', event);
      },
      emitDecision: (event) => {
        this.emit('agent:decision', event);
        this.#agents.get(event.agentId)?.handle.emit('decision', event);
      },
    });
  }

  override on<T extends EventEmitter.EventNames<SupervisorEvents>>(
    event: T,
    fn: EventEmitter.EventListener<SupervisorEvents, T>,
    context?: unknown,
  ): this {
    this.#listen(event);
    return super.on(event, fn, context);
  }

  override addListener<T extends EventEmitter.EventNames<SupervisorEvents>>(
    event: T,
    fn: EventEmitter.EventListener<SupervisorEvents, T>,
    context?: unknown,
  ): this {
    this.#listen(event);
    return super.addListener(event, fn, context);
  }

  override once<T extends EventEmitter.EventNames<SupervisorEvents>>(
    event: T,
    fn: EventEmitter.EventListener<SupervisorEvents, T>,
    context?: unknown,
  ): this {
    this.#listen(event);
    return super.once(event, fn, context);
  }

  /** The validated options. */
  get options(): PreparedSupervisorOptions {
    return this.#options;
  }

  /** Which engine runs the agents. */
  get backend(): Backend {
    return this.#engine.backend;
  }

  /** Agents known to the supervisor (pending, running or ended, until close()). */
  get agentCount(): number {
    return this.#agents.size;
  }

  /** Loads definitions and starts the engine (threads, or the Redis connection). Called by the first spawn. */
  start(): Promise<void> {
    this.#announceSimulated();
    this.#starting ??= Promise.all([
      loadDefinitions(this.#options),
      runMcpServers(this.#options),
      this.#engine.start(),
    ]).then(([definitions, mcpServers]) => {
      this.#definitions = definitions;
      this.#mcpServers = mcpServers;
    });
    return this.#starting;
  }

  /** Says that the simulated model answers: once per supervisor as an event, once per process as a warning. */
  #announceSimulated(): void {
    if (this.#announced || !this.#options.simulatedFallback) return;
    this.#announced = true;
    this.emit('provider:simulated', { provider: 'simulated', message: SIMULATED_FALLBACK_WARNING });
    warnSimulatedFallback();
  }

  /**
   * Spawns an agent by definition name (or a definition object) and returns its handle at once.
   * The agent waits until its engine has room. A spawn that cannot run (unknown agent, closed
   * supervisor) settles `result` as Failed with reason `invalid_request`.
   */
  spawn(agent: string | AgentDefinition, options: SpawnOptions): AgentHandle {
    return this.#spawn(agent, options, undefined);
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
    const handle = this.#spawn(
      agent,
      { ...options, task: options.task ?? DEFAULT_SESSION_TASK },
      undefined,
      true,
    );
    // A session continued from its journal in a new supervisor gets the messages it had received
    // again, at their indices (idempotent), so the next message is the next index.
    let received: Promise<void> | undefined;
    return new AgentSession(handle, async (text) => {
      if (options.resume === true) {
        received ??= this.#redeliver(handle.id);
        await received;
      }
      return this.instruct(handle.id, text);
    });
  }

  /** Delivers again, at their indices, the instructions an agent's journal says it received. */
  async #redeliver(agentId: string): Promise<void> {
    const events = await this.journal(agentId);
    const record = this.#agents.get(agentId);
    for (const event of events) {
      if (event.type !== 'Instructed' || !record || record.state === 'ended') continue;
      const { text, index } = event;
      if (record.state === 'pending')
        await new Promise<number>((resolve, reject) => record.held.push({ text, index, resolve, reject }));
      else await this.#deliver(record, text, index);
    }
  }

  /** {@link spawn}, its span under `trace.context` (a fan-out's) or under the parent's call `trace.callId`. */
  #spawn(
    agent: string | AgentDefinition,
    options: SpawnOptions,
    trace: { readonly context?: Context; readonly callId?: string } | undefined,
    session = false,
  ): AgentHandle {
    this.#announceSimulated();
    const id = options.id ?? randomUUID();
    this.#engine.checkAgentId(id);
    if (this.#agents.has(id))
      throw new UserError('duplicate_agent_id', `An agent with id ${id} already exists`, { agentId: id });
    const parent = options.parent === undefined ? undefined : this.#agents.get(options.parent);
    const name = typeof agent === 'string' ? agent : agent.name;
    const replaySource =
      options.replay ?? (parent?.replay ? childReplaySource(parent.replay, name, options) : undefined);
    const record = createRecord({
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
        mcpServers: {},
        ...(session ? { session: true } : {}),
        modelSettings: prepareModelSettings(options.modelSettings, 'modelSettings'),
        defaultModelSettings: this.#options.modelSettings,
        blocks: undefined,
        permissions: spawnPermissions(this.#options.permissions, options.permissions),
      },
      retryOf: options.retryOf,
      replaySource,
      agent: name,
      signal: options.signal,
      send: (text) => this.#send(id, text),
      cancel: (reason) => this.#cancel(id, reason),
      listen: this.#listen,
      approve: async (requestId, approveOptions) =>
        this.#ownApproval(id, requestId).approve(requestId, approveOptions),
      deny: async (requestId, reason, denyOptions) =>
        this.#ownApproval(id, requestId).deny(requestId, reason, denyOptions),
    });
    this.#agents.set(id, record);
    parent?.children.push(id);
    this.#tracing?.spawned(
      {
        agentId: id,
        parentId: options.parent,
        depth: record.spec.depth,
        agent: record.handle.agent,
        model: record.spec.model,
        provider: record.spec.provider,
      },
      trace?.context,
      trace?.callId,
    );
    this.emit('agent:spawned', { ...this.#ref(record), task: options.task, metadata: record.spec.metadata });
    if (this.#closed) {
      const error = new UserError('supervisor_closed', 'The supervisor is closed').toJSON();
      this.#fail(record, 'invalid_request', error);
    } else if (options.signal?.aborted) {
      this.#cancel(id, abortReason(options.signal));
    } else {
      this.start().then(
        () => this.#launch(record, typeof agent === 'string' ? agent : undefined),
        (error: unknown) => this.#fail(record, 'crashed', serializeError(error)),
      );
    }
    return record.handle;
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

  /** Runs many agents; iterate it for results as they finish, or await `all()` for them in order. */
  fanOut(specs: Iterable<SpawnSpec>, options: FanOutOptions = {}): FanOut {
    const all = [...specs];
    const workflow = this.#tracing?.workflow(all.length);
    if (!workflow) return new FanOut(this, all, options);
    const fanOut = new FanOut(
      { spawn: (agent, spawnOptions) => this.#spawn(agent, spawnOptions, { context: workflow.context }) },
      all,
      options,
    );
    void fanOut.all().then(workflow.end);
    return fanOut;
  }

  /** The handle of a known agent. */
  handle(agentId: string): AgentHandle | undefined {
    return this.#agents.get(agentId)?.handle;
  }

  /** Usage of an agent and every agent below it, once they have ended. */
  treeUsage(agentId: string): { usage: Usage; costUsd: number } | undefined {
    const record = this.#agents.get(agentId);
    return record && { usage: record.treeUsage, costUsd: record.treeCostUsd };
  }

  /**
   * Sends an instruction and resolves with its index (0 for the agent's first) once the engine has
   * it (`handle.send` does the same without waiting). Rejects with UserError `agent_not_running`.
   */
  instruct(agentId: string, text: string): Promise<number> {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended') {
      return Promise.reject(
        new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId }),
      );
    }
    if (record.state === 'pending') {
      return new Promise((resolve, reject) => record.held.push({ text, resolve, reject }));
    }
    return this.#deliver(record, text);
  }

  /**
   * Approves the call waiting on `requestId` (from `agent:approval`): it runs. `remember: 'session'`
   * approves later requests of the same rule without asking. Rejects with UserError
   * `approval_not_pending` when no such request waits (decided, timed out, or its agent ended).
   */
  approve(requestId: string, options?: ApproveOptions): Promise<void> {
    return this.#approvals.approve(requestId, options);
  }

  /** Denies the call waiting on `requestId`; the model sees the denial with `reason`. Rejects like {@link approve}. */
  deny(requestId: string, reason?: string, options?: DenyOptions): Promise<void> {
    return this.#approvals.deny(requestId, reason, options);
  }

  /** Requests waiting for a decision, oldest first (of one agent when `agentId` is given). */
  pendingApprovals(agentId?: string): ApprovalRequest[] {
    return this.#approvals.pending(agentId);
  }

  /** The agent's journal as its engine stores it (a JSONL file, or a Redis Stream); empty when it has none. */
  async journal(agentId: string): Promise<AuditEvent[]> {
    await this.start();
    return this.#engine.journal(agentId);
  }

  /** Where agents run: the engine, and its thread count or its queue and connected workers. */
  describe(): Promise<EngineDescription> {
    return this.#engine.describe();
  }

  /** Memory of every thread after a GC (threads engine; the redis engine's threads are the workers'). */
  async measureThreads(): Promise<HostStats[]> {
    await this.start();
    return this.#engine.measure();
  }

  /** Cancels every agent (they end Failed(cancelled)), then stops the engine. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const open = [...this.#agents.values()].filter((r) => r.state !== 'ended');
    for (const record of open) this.#cancel(record.id, 'supervisor closed');
    await Promise.all(open.map((r) => r.handle.result));
    // The engine closes before start-up is waited for: threads still starting are stopped, not
    // waited for (a Ctrl-C right after `troupe fanout` must not wait seconds for threads that will
    // never run an agent); the engine settles its own start-up.
    await this.#engine.close();
    if (this.#starting) await this.#starting.catch(() => {});
  }

  /** Resolves a started spawn and hands it to the engine (after forking the journal it retries). */
  #launch(record: AgentRecord, name: string | undefined): void {
    if (record.state !== 'pending') return;
    if (record.replaySource !== undefined && record.replay === undefined) {
      loadReplay(record.replaySource).then(
        ({ state, instructions }) => {
          record.replay = state;
          record.spec.replay = state.recording;
          // The recorded instructions go first, in their recorded order, before any sent since.
          record.held.unshift(
            ...instructions.map((text, index) => ({ text, index, resolve: () => {}, reject: () => {} })),
          );
          this.#launch(record, name);
        },
        (error: unknown) => this.#fail(record, 'invalid_request', serializeError(error)),
      );
      return;
    }
    const problem = resolveSpawn(record.spec, name, {
      definitions: this.#definitions,
      options: this.#options,
      modelOf: (agentId) => this.#agents.get(agentId)?.spec.model,
    });
    if (problem) {
      this.#fail(record, 'invalid_request', problem);
      return;
    }
    record.spec.mcpServers = this.#mcpServers;
    const definition = record.spec.definition;
    if (definition === undefined || !hasBlockReferences(definition)) {
      this.#continue(record);
      return;
    }
    // Blocks are resolved here, where the spawn happens, so any store works with either engine;
    // the agent's Started event pins what they resolved to.
    resolveAgentBlocks(definition, this.#options.blocks).then(
      (blocks) => {
        record.spec.blocks = blocks;
        this.#continue(record);
      },
      (error: unknown) => {
        // A resumed agent runs the blocks its journal recorded: a store that changed since
        // (a block removed) must not stop it.
        if (record.spec.resume || record.retryOf !== undefined) this.#continue(record);
        else this.#fail(record, 'invalid_request', serializeError(error));
      },
    );
  }

  /** Forks the journal a retry continues, then runs the record. */
  #continue(record: AgentRecord): void {
    if (record.state !== 'pending') return;
    const { retryOf } = record;
    if (retryOf === undefined) {
      this.#run(record);
      return;
    }
    this.#engine.forkJournal(retryOf, record.id).then(
      () => {
        record.spec.resume = true;
        this.#run(record);
      },
      (error: unknown) => this.#fail(record, 'crashed', serializeError(error)),
    );
  }

  /** Hands a resolved record to the engine, with the instructions sent so far. */
  #run(record: AgentRecord): void {
    if (record.state !== 'pending') return;
    record.state = 'running';
    this.#engine.run(actorSpec(record.spec, this.#tracing?.actorContext(record.id)));
    for (const { text, index, resolve, reject } of record.held.splice(0))
      this.#deliver(record, text, index).then(resolve, reject);
  }

  async #deliver(record: AgentRecord, text: string, at?: number): Promise<number> {
    const index = await this.#engine.deliver(record.id, {
      type: 'instruction',
      text,
      ...(at === undefined ? {} : { index: at }),
    });
    if (index === undefined) {
      throw new UserError('agent_not_running', `Agent ${record.id} is not running`, { agentId: record.id });
    }
    return index;
  }

  #ref(record: AgentRecord): { agentId: string; parentId: string | undefined; agent: string } {
    return { agentId: record.id, parentId: record.spec.parentId, agent: record.handle.agent };
  }

  /** `handle.send`: as `instruct`, without waiting (the latency path: no more than one promise). */
  #send(agentId: string, text: string): void {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended') {
      throw new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId });
    }
    // Redis closed at close(): nothing waits for this instruction. A full queue is the sender's to
    // know about: `send` has no promise, so it hears of it as an event.
    const dropped = (error: unknown): void => {
      if (error instanceof UserError && error.code === 'instruction_queue_full') {
        this.emit('agent:dropped', { ...this.#ref(record), text, error: serializeError(error) });
      }
    };
    if (record.state === 'pending') {
      record.held.push({ text, resolve: () => {}, reject: dropped });
      return;
    }
    this.#engine.deliver(agentId, { type: 'instruction', text }).catch(dropped);
  }

  #cancel(agentId: string, reason: string): void {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended' || record.cancelReason !== undefined) return;
    record.cancelReason = reason;
    for (const child of record.children) this.#cancel(child, `parent cancelled: ${reason}`);
    if (record.state === 'pending') {
      this.#fail(record, 'cancelled', cancelledError(reason));
      return;
    }
    this.#engine.deliver(agentId, { type: 'cancel', reason }).catch(() => {
      // The engine cannot reach the agent: the grace timer stops it.
    });
    if (hasEnded(record)) return;
    record.cancelTimer = setTimeout(() => {
      if (!hasEnded(record)) this.#engine.stop(agentId, reason);
    }, this.#options.graceMs);
    record.cancelTimer.unref();
  }

  /** The approval book, once `requestId` is known to be a request of `agentId`. */
  #ownApproval(agentId: string, requestId: string): ApprovalBook {
    if (!this.#approvals.pending(agentId).some((request) => request.requestId === requestId)) {
      throw new UserError(
        'approval_not_pending',
        `Agent ${agentId} has no approval request ${requestId} waiting: it was decided, timed out, or the agent ended`,
        { agentId, requestId },
      );
    }
    return this.#approvals;
  }

  #fail(record: AgentRecord, reason: FailureReason, error: SerializedError): void {
    this.#finish(record, failedOutcome(record.id, reason, error));
  }

  #finish(record: AgentRecord, outcome: AgentOutcome): void {
    if (record.state === 'ended') return;
    record.state = 'ended';
    if (record.cancelTimer) clearTimeout(record.cancelTimer);
    record.removeAbortListener();
    if (record.held.length > 0) {
      // Only when something waits for it: an error's stack trace was ~7 % of the main thread's
      // time in a fan-out profile, built for every agent and thrown away.
      const notRunning = new UserError('agent_not_running', `Agent ${record.id} is not running`, {
        agentId: record.id,
      });
      for (const held of record.held.splice(0)) held.reject(notRunning);
    }
    rollUpUsage(this.#agents, record, outcome.usage, outcome.costUsd);
    this.#tracing?.ended(record.id, outcome);
    this.#approvals.ended(record.id);
    const event = { ...this.#ref(record), outcome };
    this.emit(outcome.status === 'completed' ? 'agent:completed' : 'agent:failed', event);
    record.handle.emit('ended', event);
    record.settle(outcome);
  }

  /** The usage sink's record of one model request an engine reported. */
  #usageRecord(record: AgentRecord, report: Extract<AgentReport, { type: 'receipt' }>): UsageRecord {
    const { spec } = record;
    return usageRecord(
      {
        agentId: record.id,
        parentId: spec.parentId,
        definition: {
          name: spec.definition?.name ?? record.handle.agent,
          hash: spec.definition ? cachedDefinitionHash(spec.definition) : '',
        },
        provider: spec.provider,
        model: spec.model,
        replay: spec.replay?.ref,
        // Resolved at spawn; a resumed agent whose blocks could not be resolved again runs its
        // journal's, which the supervisor does not read here.
        blocks: spec.blocks?.pinned ?? [],
      },
      {
        round: report.round,
        step: report.step,
        usage: report.usage,
        costUsd: report.costUsd,
        latencyMs: report.latencyMs,
        endedAt: report.endedAt,
        ...(report.errorCode === undefined ? {} : { errorCode: report.errorCode }),
      },
    );
  }

  /** What the engine may ask and tell: its agents' reports and ends, host tools, complete_task. */
  #engineHost(): EngineHost {
    const running = (agentId: string): AgentRecord | undefined => {
      const record = this.#agents.get(agentId);
      return record?.state === 'running' ? record : undefined;
    };
    return {
      closing: () => this.#closed,
      report: (report) => {
        const record = running(report.agentId);
        if (!record) return;
        if (this.#tracing) traceReport(this.#tracing, report);
        if (report.type === 'approval') this.#approvals.requested(this.#ref(record), report.request);
        else if (report.type === 'decided') {
          const { type: _type, agentId: _agentId, ...decided } = report;
          this.#approvals.decided({ ...this.#ref(record), ...decided });
        } else emitAgentReport(this, record.handle, this.#ref(record), report);
        const sink = this.#options.usageSink;
        if (sink && report.type === 'receipt') deliverUsage(sink, this.#usageRecord(record, report));
      },
      ended: (agentId, outcome) => {
        const record = running(agentId);
        if (record) this.#finish(record, outcome);
      },
      lost: (agentId, cause) => {
        const record = running(agentId);
        if (!record) return 'ended';
        if (record.completion) this.#finish(record, completedOutcome(agentId, record.completion.value));
        else if (record.cancelReason !== undefined)
          this.#fail(record, 'cancelled', cancelledError(record.cancelReason));
        else if (this.#closed) this.#fail(record, 'crashed', cause);
        return hasEnded(record) ? 'ended' : 'restart';
      },
      completeTask: async (agentId, result) => {
        const record = running(agentId);
        if (!record) return { accepted: false, message: 'The agent is not running.' };
        if (record.cancelReason !== undefined)
          return { accepted: false, message: 'The agent was cancelled.' };
        if (record.completion) {
          return {
            accepted: false,
            message: 'complete_task was already called: the task is complete. Stop now.',
          };
        }
        const problems = this.#results.problems(record.spec.definition, result);
        if (problems)
          return { accepted: false, message: `The result does not match the output schema: ${problems}` };
        record.completion = { value: result };
        return { accepted: true };
      },
      callHostTool: (agentId, name, args, callId) => {
        if (callId !== undefined) this.#tracing?.hostToolCall(agentId, name, callId);
        return runHostTool(
          {
            hostTools: this.#options.hostTools,
            agents: this.#agents,
            maxDepth: this.#options.maxDepth,
            maxChildren: this.#options.maxChildren,
            spawn: (agent, options) =>
              this.#spawn(agent, options, callId === undefined ? undefined : { callId }),
          },
          agentId,
          name,
          args,
        );
      },
      emit: (name, ...args) => {
        if (this.#tracing) traceEngineEvent(this.#tracing, name, args);
        (this.emit as (name: string, ...rest: unknown[]) => boolean)(name, ...args);
      },
    };
  }
}
