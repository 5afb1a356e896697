/**
 * The agents of one Supervisor and their lifecycle, written once for both engines: records and
 * handles, spawn, launch (replay sources, definitions, blocks, retries), instructions, cancel,
 * approvals, ends and usage roll-up, and the {@link EngineHost} an engine reports to. The
 * Supervisor (supervisor.ts) is the public face over it.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from '@opentelemetry/api';
import type { EventEmitter } from 'eventemitter3';
import { abortReason } from '../abort.ts';
import { hasBlockReferences, resolveAgentBlocks } from '../blocks/resolve.ts';
import {
  MAX_ADOPTION_SCAN_BYTES,
  MAX_ADOPTION_SCAN_JOURNALS,
  MAX_INSTRUCTION_BYTES,
  MAX_SPAWN_INPUT_BYTES,
  MAX_STARTED_HEAD_BYTES,
} from '../constants.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { createEngine } from '../engines/create-engine.ts';
import type { ChildStart, Engine, EngineHost } from '../engines/engine.ts';
import { describeValue, type SerializedError, serializeError, UserError } from '../errors.ts';
import { type AuditEvent, isTerminal } from '../journal/events.ts';
import { forkOrigins } from '../journal/fork.ts';
import { knownCost } from '../journal/usage.ts';
import {
  cancelledError,
  completedOutcome,
  failedOutcome,
  ownSpend,
  recordedOutcome,
  unrunReason,
} from '../loop/outcome.ts';
import type { AgentOutcome, FailureReason } from '../loop/types.ts';
import {
  cachedDefinitionHash,
  deliverUsage,
  type UsageRecord,
  type UsageRequest,
  usageRecord,
} from '../loop/usage-record.ts';
import type { McpServers } from '../mcp/config.ts';
import { extend } from '../objects.ts';
import { AWAIT_AGENTS, type OptionalSignal } from '../protocol/messages.ts';
import { SIMULATED_FALLBACK_WARNING, warnSimulatedFallback } from '../providers/environment.ts';
import { prepareModelSettings } from '../providers/model-settings.ts';
import { addUsage, ZERO_USAGE } from '../providers/receipt.ts';
import type { AgentTracing } from '../telemetry/agent-tracing.ts';
import {
  adoptedChildren,
  cutOffChildren,
  instructionOf,
  type KnownChild,
  movedInstructions,
  orphanOutcome,
  parentJournal,
  redeliveries,
  type SentInstruction,
  spawnedChildren,
  spawnedOutcome,
  warnNotExamined,
} from './adoption.ts';
import { emitAgentReport, emitUnreportedUsage, signalOfEvent } from './agent-events.ts';
import { AgentHandle, type HandleControl } from './agent-handle.ts';
import {
  type AgentRecord,
  createRecord,
  type EndedRecord,
  endedRecord,
  hasEnded,
  isEnded,
  type KnownRecord,
} from './agent-record.ts';
import { ApprovalBook } from './approvals.ts';
import { loadDefinitions, registerDefinitionMcpCredentials, runMcpServers } from './definitions.ts';
import { maskedCause, maskedEngineEvent, maskedOutcome, maskedReport } from './engine-masking.ts';
import type { SupervisorEvents } from './events.ts';
import { type HostToolContext, keepOutcome, runHostTool } from './host-tools.ts';
import { type PreparedSupervisorOptions, spawnPermissions } from './options.ts';
import { ORCHESTRATION_TOOLS } from './orchestration.ts';
import { actorSpec } from './record-spec.ts';
import { childReplaySource, loadReplay } from './replay.ts';
import { ResultCheck } from './result-check.ts';
import { RunBudget } from './run-budget.ts';
import type { SpawnOptions } from './spawn-options.ts';
import { resolveSpawn } from './spawn-resolution.ts';
import { traceEngineEvent, traceReport } from './trace-reports.ts';
import { unreportedSpend } from './unreported-spend.ts';
import { rollUpUsage } from './usage-tree.ts';

/** Where a spawn's span goes: under a fan-out's context, or under the parent's tool call. */
export interface SpawnTrace {
  readonly context?: Context;
  readonly callId?: string;
}

/** The agents of one Supervisor: see the file comment. */
export class Agents {
  /**
   * Every agent held, by id: pending, running, and ended ones until evicted (see {@link #evict}).
   * An entry whose state is 'ended' is an {@link EndedRecord}.
   */
  readonly records = new Map<string, KnownRecord>();
  /**
   * Ended agents nothing needs any more (no live parent, no live descendant), oldest end first:
   * the ones past `retainEndedAgents` are evicted. An entry may have been needed again since (a
   * spawn under it); eviction checks.
   */
  readonly #evictable = new Set<string>();
  /** Ids the caller chose of evicted agents: `duplicate_agent_id` still holds for them. */
  readonly #evictedIds = new Set<string>();
  /**
   * Journals a resume's adoption already named as not examined: each is named in one warning per
   * supervisor, however many agents it resumes. At most `MAX_ADOPTION_SCAN_JOURNALS` are kept;
   * one past that is named again by each later resume that leaves it unread.
   */
  readonly #warnedNotExamined = new Set<string>();
  readonly engine: Engine;
  readonly approvals: ApprovalBook;
  readonly #options: PreparedSupervisorOptions;
  readonly #emitter: EventEmitter<SupervisorEvents>;
  /** Undefined when `tracing: false`. */
  readonly #tracing: AgentTracing | undefined;
  readonly #results = new ResultCheck();
  #definitions: Map<string, AgentDefinition> = new Map();
  /** MCP servers every agent may use (the option and `.mcp.json`), known once started. */
  #mcpServers: McpServers = {};
  #starting: Promise<void> | undefined;
  #closed = false;
  /** What every agent spent, against `runLimits`. */
  readonly budget: RunBudget;
  #announced = false;
  #closing: Promise<void> | undefined;
  /** The optional signals someone listens for (see {@link signalOfEvent}); the set only grows. */
  readonly #wantedSignals = new Set<OptionalSignal>();
  /** Asks the engine for the signals a new listener of `event` needs. */
  readonly listen = (event: string | symbol): void => {
    const signal = signalOfEvent(event);
    if (signal === undefined || this.#wantedSignals.has(signal)) return;
    this.#wantedSignals.add(signal);
    this.engine.wantSignals?.([...this.#wantedSignals]);
  };
  /**
   * What every handle calls, one object for all: a closure per handle made in `spawn` would keep
   * the record (its spec, task and definition) alive as long as the handle.
   */
  readonly #handleControl: HandleControl = {
    send: (agentId, text) => this.#send(agentId, text),
    cancel: (agentId, reason) => this.#cancel(agentId, reason),
    listen: this.listen,
    approve: async (agentId, requestId, options) =>
      this.#ownApproval(agentId, requestId).approve(requestId, options),
    deny: async (agentId, requestId, reason, options) =>
      this.#ownApproval(agentId, requestId).deny(requestId, reason, options),
  };

  constructor(
    options: PreparedSupervisorOptions,
    emitter: EventEmitter<SupervisorEvents>,
    tracing: AgentTracing | undefined,
  ) {
    this.#options = options;
    this.#emitter = emitter;
    this.#tracing = tracing;
    const userTools = Object.entries(options.hostTools).map(([name, tool]) => ({
      name,
      description: tool.description,
      parameters: tool.parameters,
      readOnly: tool.readOnly ?? false,
      ...(tool.needsApproval === true ? { needsApproval: true } : {}),
    }));
    this.engine = createEngine(options, {
      host: this.#engineHost(),
      hostTools: [...userTools, ...ORCHESTRATION_TOOLS],
    });
    this.budget = new RunBudget(options.runLimits);
    // The usage sink and the run budget are fed from the per-request receipts: they must be sent
    // without a listener.
    if (options.usageSink || this.budget.limited) this.listen('agent:usage');
    this.approvals = new ApprovalBook({
      deliver: async (agentId, requestId, decision) => {
        await this.engine.deliver(agentId, { type: 'approval', requestId, decision });
      },
      listening: (agentId) =>
        emitter.listenerCount('agent:approval') > 0 ||
        (this.records.get(agentId)?.handle.listenerCount('approval') ?? 0) > 0,
      unattended: options.unattended,
      emitApproval: (event) => {
        emitter.emit('agent:approval', event);
        this.records.get(event.agentId)?.handle.emit('approval', event);
      },
      emitDecision: (event) => {
        emitter.emit('agent:decision', event);
        this.records.get(event.agentId)?.handle.emit('decision', event);
      },
    });
  }

  /** Loads definitions and starts the engine (threads, or the Redis connection). Called by the first spawn. */
  start(): Promise<void> {
    this.#announceSimulated();
    this.#starting ??= Promise.all([
      loadDefinitions(this.#options),
      runMcpServers(this.#options),
      this.engine.start(),
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
    this.#emitter.emit('provider:simulated', { provider: 'simulated', message: SIMULATED_FALLBACK_WARNING });
    warnSimulatedFallback();
  }

  /** Delivers again, at their indices, the instructions an agent's journal says it received. */
  async redeliver(agentId: string): Promise<void> {
    await this.start();
    const events = await this.engine.journal(agentId);
    const record = this.#live(agentId);
    for (const event of events) {
      if (event.type !== 'Instructed' || !record || hasEnded(record)) continue;
      const { text, index } = event;
      if (record.state === 'pending')
        await new Promise<number>((resolve, reject) => record.held.push({ text, index, resolve, reject }));
      else await this.#deliver(record, text, index);
    }
  }

  /**
   * Spawns an agent (see `Supervisor.spawn`), its span under `trace.context` (a fan-out's) or under
   * the parent's call `trace.callId`; `session` makes it a session (see `Supervisor.session`).
   */
  spawn(
    agent: string | AgentDefinition,
    options: SpawnOptions,
    trace: SpawnTrace | undefined,
    session = false,
  ): AgentHandle {
    checkSpawnCall(agent, options);
    this.#announceSimulated();
    const id = options.id ?? randomUUID();
    this.engine.checkAgentId(id);
    if (this.records.has(id) || this.#evictedIds.has(id))
      throw new UserError('duplicate_agent_id', `An agent with id ${id} already exists`, { agentId: id });
    const parent = options.parent === undefined ? undefined : this.records.get(options.parent);
    const liveParent = parent === undefined || isEnded(parent) ? undefined : parent;
    const name = typeof agent === 'string' ? agent : agent.name;
    const replaySource =
      options.replay ??
      (liveParent?.replay ? childReplaySource(liveParent.replay, name, options) : undefined);
    const record = createRecord({
      named: options.id !== undefined,
      spec: {
        agentId: id,
        parentId: options.parent,
        ...(options.parent !== undefined && trace?.callId !== undefined ? { spawnCallId: trace.callId } : {}),
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
      control: this.#handleControl,
      tree: liveParent?.tree,
    });
    this.records.set(id, record);
    liveParent?.children.push(id);
    for (let above = parent; above !== undefined; above = this.#parentOf(above)) above.liveDescendants += 1;
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
    this.#emitter.emit(
      'agent:spawned',
      extend(this.#ref(record), { task: options.task, metadata: record.spec.metadata }),
    );
    const spent = this.budget.spent;
    if (this.#closed) {
      const error = new UserError('supervisor_closed', 'The supervisor is closed').toJSON();
      this.#fail(record, 'invalid_request', error);
    } else if (options.signal?.aborted) {
      // Before the budget: a caller that stopped its fan-out when the budget was spent (troupe
      // fanout, so that resume runs these) gets them cancelled, not failed for good.
      this.#cancel(id, abortReason(options.signal));
    } else if (spent !== undefined) {
      this.#fail(
        record,
        'budget',
        new UserError(spent.code, `${spent.message}: no agent is started`).toJSON(),
      );
    } else if (liveParent?.cancelReason !== undefined) {
      // The parent's cancel has already cascaded to the children it had: a child whose spawn
      // crossed that cancel (a spawn_agent call on its way from the parent's thread) would
      // otherwise run, unowned, until close().
      this.#cancel(id, `parent cancelled: ${liveParent.cancelReason}`);
    } else {
      this.start().then(
        () => {
          try {
            this.#launch(record, typeof agent === 'string' ? agent : undefined);
          } catch (error) {
            // A definition object that is not a whole definition (built by hand in JavaScript):
            // that agent's request is invalid; it must not become an unhandled rejection.
            this.#fail(record, 'invalid_request', serializeError(error));
          }
        },
        // A user's mistake in the Supervisor's options (a tool or provider module that does not
        // load) is an invalid request, not a crash: retrying it fails the same way.
        (error: unknown) => {
          const cause = serializeError(error);
          this.#fail(record, unrunReason(cause), cause);
        },
      );
    }
    return record.handle;
  }

  /** The record of a pending or running agent. */
  #live(agentId: string): AgentRecord | undefined {
    const record = this.records.get(agentId);
    return record === undefined || isEnded(record) ? undefined : record;
  }

  #parentOf(record: KnownRecord): KnownRecord | undefined {
    const { parentId } = record.spec;
    return parentId === undefined ? undefined : this.records.get(parentId);
  }

  /** `Supervisor.instruct`: resolves with the instruction's index once the engine has it. */
  instruct(agentId: string, text: string): Promise<number> {
    const record = this.records.get(agentId);
    if (!record && !this.#evictedIds.has(agentId)) {
      return Promise.reject(
        new UserError(
          'unknown_agent',
          `No agent with id ${agentId} in this supervisor (never spawned here, or ended and no longer kept: retainEndedAgents)`,
          { agentId },
        ),
      );
    }
    if (!record || record.state === 'ended') {
      return Promise.reject(
        new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId }),
      );
    }
    const tooLarge = instructionTooLarge(agentId, text);
    if (tooLarge) return Promise.reject(tooLarge);
    if (record.state === 'pending') {
      return new Promise((resolve, reject) => record.held.push({ text, resolve, reject }));
    }
    return this.#deliver(record, text);
  }

  /** A session's turn `turn` alone is cancelled (see `AgentSession.cancelTurn`). */
  async cancelTurn(agentId: string, turn: number, reason: string): Promise<void> {
    const record = this.records.get(agentId);
    if (!record || record.state === 'ended') return;
    await this.engine.deliver(agentId, { type: 'cancel_turn', turn, reason });
  }

  /** Cancels every agent (they end Failed(cancelled)), then stops the engine. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const open = [...this.records.values()].filter((r): r is AgentRecord => !isEnded(r));
    for (const record of open) this.#cancel(record.id, 'supervisor closed');
    await Promise.all(open.map((r) => r.handle.result));
    // The engine closes before start-up is waited for: threads still starting are stopped, not
    // waited for (a Ctrl-C right after `troupe fanout` must not wait seconds for threads that will
    // never run an agent); the engine settles its own start-up.
    await this.engine.close();
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
      modelOf: (agentId) => this.records.get(agentId)?.spec.model,
    });
    if (problem) {
      this.#fail(record, 'invalid_request', problem);
      return;
    }
    record.spec.mcpServers = this.#mcpServers;
    const definition = record.spec.definition;
    try {
      if (definition !== undefined) registerDefinitionMcpCredentials(definition);
    } catch (error) {
      this.#fail(record, 'invalid_request', serializeError(error));
      return;
    }
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

  /**
   * Forks the journal a retry continues, then runs the record, after adopting what its journal
   * shows of its children when it resumes one (a retry always does: its fork, or its own journal
   * when a retry cut off earlier is resumed).
   */
  #continue(record: AgentRecord): void {
    if (record.state !== 'pending') return;
    const { retryOf } = record;
    if (retryOf === undefined) {
      if (record.spec.resume) this.#adoptThenRun(record);
      else this.#run(record);
      return;
    }
    this.engine.forkJournal(retryOf, record.id).then(
      (forked) => {
        if (forked.requests > 0) record.inherited = { usage: forked.usage, costUsd: knownCost(forked) };
        record.spec.resume = true;
        this.#adoptThenRun(record);
      },
      (error: unknown) => this.#fail(record, 'crashed', serializeError(error)),
    );
  }

  /** Only a resume reads journals here: what the stopped supervisor knew of the agent's children. */
  #adoptThenRun(record: AgentRecord): void {
    this.#adopt(record).then(
      () => this.#run(record),
      // Unreadable journals (damaged, gone): it runs as it did before adoption existed, its
      // cut-off calls recorded as interrupted.
      () => this.#run(record),
    );
  }

  /**
   * Makes the children a resumed agent's journal shows it had (see adoption.ts) this supervisor's,
   * before it runs: finished ones with their recorded outcomes, unfinished ones resumed from their
   * journals with the instructions they were sent, so `await_agents` and `send_instruction` take
   * them. A cut-off `spawn_agent` call whose child exists gets that child as its result, and a
   * cut-off `await_agents` runs again (it only waits).
   */
  async #adopt(record: AgentRecord): Promise<void> {
    const scan: AdoptionScan = { left: MAX_ADOPTION_SCAN_JOURNALS, notExamined: new Set() };
    try {
      await this.#adoptTree(record, scan);
    } finally {
      // One warning per supervisor for each journal the searches left unread (a journal whose
      // first line is too long is left unread by each search, under each finished descendant, and
      // by each resume): a long-lived supervisor resuming many agents names it once.
      const unnamed = [...scan.notExamined].filter((name) => !this.#warnedNotExamined.has(name));
      for (const name of unnamed) {
        if (this.#warnedNotExamined.size >= MAX_ADOPTION_SCAN_JOURNALS) break;
        this.#warnedNotExamined.add(name);
      }
      if (unnamed.length > 0) warnNotExamined(record.id, unnamed);
    }
  }

  async #adoptTree(record: AgentRecord, scan: AdoptionScan): Promise<void> {
    const events = await this.engine.journal(record.id);
    const parent = parentJournal(events);
    const at = { id: record.id, depth: record.spec.depth };
    const namedAs = this.#namedAs(record, events);
    if (parent === undefined) {
      // It had ended: it only reports its outcome, and its unfinished descendants are orphans.
      if (events.some(isTerminal)) {
        await this.#holdChildren(record, at, spawnedChildren(events), scan);
        if (hasEnded(record)) return;
        await this.#endUnadopted(record, at, events, await this.#childStarts(namedAs, scan), scan);
      }
      return;
    }
    const children = [...parent.children];
    const known = new Set(children.map((child) => child.agentId));
    const spawnedBy: { callId: string; agentId: string; agent: string }[] = [];
    const found = await this.#childStarts(namedAs, scan);
    if (parent.cutOffSpawns.length > 0) {
      for (const { call, started } of cutOffChildren(parent.cutOffSpawns, found, known)) {
        const agent = typeof call.args.agent === 'string' ? call.args.agent : (started.agent ?? 'unknown');
        children.push({ agentId: started.agentId, agent, args: call.args });
        known.add(started.agentId);
        spawnedBy.push({ callId: call.callId, agentId: started.agentId, agent });
      }
    }
    const sending = new Map<string, SentInstruction[]>();
    for (const call of parent.cutOffSends) {
      const instruction = instructionOf(call);
      if (instruction === undefined || !known.has(instruction.to)) continue;
      const pending = { text: instruction.text, ...(call.seq === undefined ? {} : { callSeq: call.seq }) };
      sending.set(instruction.to, [...(sending.get(instruction.to) ?? []), pending]);
    }
    // Journals read for the descendants of finished children are bounded by `scan.left`.
    for (const child of children) {
      if (hasEnded(record)) return;
      const sent = [...(parent.sent.get(child.agentId) ?? []), ...(sending.get(child.agentId) ?? [])];
      await this.#adoptChild(record, child, sent, scan);
    }
    if (hasEnded(record)) return;
    await this.#endUnadopted(record, at, events, found, scan);
    if (hasEnded(record)) return;
    for (const { callId, agentId, agent } of spawnedBy)
      keepOutcome(record, callId, Promise.resolve(spawnedOutcome(agentId, agent)));
    // Delivered again above to a child that goes on: queued, whether or not the stop came first.
    // To an ended child it stays interrupted (whether that child read it is not known).
    for (const call of parent.cutOffSends) {
      const to = instructionOf(call)?.to;
      if (to !== undefined && sending.has(to) && this.#live(to) !== undefined)
        keepOutcome(
          record,
          call.callId,
          Promise.resolve({ ok: true, text: `Instruction queued for ${to}.` }),
        );
    }
    for (const { callId, args } of parent.cutOffAwaits)
      runHostTool(this.#hostToolContext(callId), record.id, AWAIT_AGENTS, args, { callId }).catch(() => {});
  }

  /**
   * The ids the children of resumed `record` (whose journal is `events`) name as their parent: its
   * own, and for a retry every attempt its journal was forked from: those its `Started.forkedFrom`
   * records (whatever supervisor ran them, {@link forkedInputs}), then `retryOf` and that one's, as
   * far as this supervisor knows them (for a fork written before `forkedFrom` was). The children an
   * earlier attempt started name it, not the retry: a `spawn_agent` call that attempt ended before
   * answering is copied into each later fork, cut off, and its child is found only under that
   * attempt's id.
   */
  #namedAs(record: AgentRecord, events: readonly AuditEvent[]): string[] {
    const ids = [record.id];
    for (const from of forkOrigins(events[0])) if (!ids.includes(from)) ids.push(from);
    for (let from = record.retryOf; from !== undefined && !ids.includes(from); ) {
      ids.push(from);
      const known = this.records.get(from);
      from = known !== undefined && 'retryOf' in known ? known.retryOf : undefined;
    }
    return ids;
  }

  /**
   * The journals naming one of `parentIds` as their parent (`Engine.childStarts`: an agent's id, and
   * for a retry the attempts its journal was forked from, {@link #namedAs}): for a cut-off
   * `spawn_agent`'s child, and for the unfinished children its adoption does not take
   * ({@link #endUnadopted}), on both engines. Those its bounds left unread are added to
   * `scan.notExamined`, named in one warning per resume ({@link #adopt}). The searches of one resume
   * share `scan` as their `search`: the redis engine lists its queue's journal keys once per resume.
   */
  async #childStarts(parentIds: readonly string[], scan: AdoptionScan): Promise<ChildStart[]> {
    const { engine } = this;
    if (engine.childStarts === undefined) return [];
    const starts: ChildStart[] = [];
    for (const parentId of parentIds) {
      const found = await engine.childStarts(parentId, {
        maxJournals: MAX_ADOPTION_SCAN_JOURNALS,
        maxBytes: MAX_ADOPTION_SCAN_BYTES,
        maxHeadBytes: MAX_STARTED_HEAD_BYTES,
        search: scan,
      });
      for (const name of found.notExamined) scan.notExamined.add(name);
      starts.push(...found.starts);
    }
    return starts;
  }

  /**
   * Ends the unfinished agents among `starts` (journals naming `parent`, whose journal is `events`:
   * resumed `root` itself, or a finished or orphaned descendant {@link #holdEnded} holds) that its
   * adoption does not take ({@link adoptedChildren}: a program's `spawn` with `parent`, or a child
   * whose spawn_agent call its journal lost, or a child of an agent that ended between a
   * spawn_agent call and its result): nothing would resume or await them, so they are orphans,
   * ended and held as {@link #holdChildren} ends one, as `troupe resume` ends them at any depth.
   * Finished ones are left as they are.
   */
  async #endUnadopted(
    root: AgentRecord,
    parent: { readonly id: string; readonly depth: number },
    events: readonly AuditEvent[],
    starts: readonly ChildStart[],
    scan: AdoptionScan,
  ): Promise<void> {
    const taken = adoptedChildren(events, starts);
    const unadopted = starts
      .filter((started) => !taken.has(started.agentId))
      .map((started) => ({ agentId: started.agentId, agent: started.agent, args: undefined }));
    if (unadopted.length === 0) return;
    await this.#holdChildren(root, parent, unadopted, scan, true);
  }

  /** Holds one child of a resumed `parent`: ended with its recorded outcome, or resumed (or started). */
  async #adoptChild(
    parent: AgentRecord,
    child: KnownChild,
    sent: readonly SentInstruction[],
    scan: AdoptionScan,
  ): Promise<void> {
    const events = await this.engine.journal(child.agentId);
    if (hasEnded(parent) || this.records.has(child.agentId)) return;
    const started = events[0]?.type === 'Started' ? events[0] : undefined;
    const agent = child.agent ?? started?.definition.name;
    if (agent === undefined) return;
    parent.tree ??= { subagents: 0 };
    parent.tree.subagents += 1;
    if (events.some(isTerminal)) {
      parent.children.push(child.agentId);
      const at = { id: parent.id, depth: parent.spec.depth };
      await this.#holdEnded(parent, at, child.agentId, agent, events, scan);
      return;
    }
    // Never started (it was still pending when the supervisor stopped): it starts now, as spawned.
    const args = child.args ?? {};
    const input =
      started !== undefined
        ? { task: started.task, context: started.context, metadata: started.metadata, resume: true }
        : {
            task: String(args.task),
            ...(Array.isArray(args.context) ? { context: args.context.map(String) } : {}),
          };
    if (started === undefined && child.args === undefined) return;
    const handle = this.spawn(
      agent,
      {
        id: child.agentId,
        parent: parent.id,
        ...input,
        provider: parent.spec.provider,
        limits: parent.spec.limits,
      },
      undefined,
    );
    const spawned = this.#live(handle.id);
    if (spawned?.state !== 'pending') return;
    const delivered = redeliveries(events, sent);
    delivered.forEach(({ text }, index) => {
      spawned.held.push({ text, index, resolve: () => {}, reject: () => {} });
    });
    // Its Resumed event says where its parent's instructions are now: a later adoption keys by it.
    spawned.spec.instructionIndices = movedInstructions(delivered);
  }

  /**
   * Holds a finished descendant of resumed `root` with the outcome its journal (`events`) recorded
   * (nothing runs; its usage rolls up through `parent`), then its own children, at any depth: a
   * finished child orchestrator's children are the tree's too. An unfinished one among them is an
   * orphan (its parent ended, so nothing would resume or await it): its journal is ended
   * `Failed(cancelled)` ({@link orphanOutcome}, as `troupe resume` ends one under a parent that does
   * not run again), it is held with that outcome, and `agent:spawned` and `agent:failed` say so; its
   * own unfinished children are orphans in turn: those its `spawn_agent` results name and those
   * whose journals name it as parent ({@link #endUnadopted}), as
   * `troupe resume` finds them. At most `scan.left` more journals are read.
   */
  async #holdEnded(
    root: AgentRecord,
    parent: { readonly id: string; readonly depth: number },
    id: string,
    agent: string,
    events: readonly AuditEvent[],
    scan: AdoptionScan,
    orphaned = false,
  ): Promise<void> {
    const ended = events.findLast(isTerminal);
    if (ended === undefined) return;
    const started = events[0]?.type === 'Started' ? events[0] : undefined;
    const outcome = recordedOutcome(ended);
    const depth = parent.depth + 1;
    const held: EndedRecord = {
      state: 'ended',
      id,
      spec: { parentId: parent.id, depth, model: started?.model ?? '' },
      handle: new AgentHandle(id, agent, parent.id, Promise.resolve(outcome), this.#handleControl),
      named: true,
      liveDescendants: 0,
      treeUsage: ZERO_USAGE,
      treeCostUsd: 0,
    };
    this.records.set(id, held);
    rollUpUsage(this.records, held, outcome);
    if (orphaned) {
      const ref = { agentId: id, parentId: parent.id, agent };
      this.#emitter.emit('agent:spawned', {
        ...ref,
        task: started?.task ?? '',
        metadata: started?.metadata ?? {},
      });
      this.#emitter.emit('agent:failed', { ...ref, outcome });
    }
    await this.#holdChildren(root, { id, depth }, spawnedChildren(events), scan);
    if (hasEnded(root)) return;
    // The unfinished ones naming it that its results do not name (a program's spawn with `parent`,
    // the child of a call it ended before answering) would never end either.
    await this.#endUnadopted(root, { id, depth }, events, await this.#childStarts([id], scan), scan);
  }

  /**
   * Holds `children` of `parent` (those the journal of an ended `parent` shows it spawned), as
   * {@link #holdEnded} does: finished ones with their outcomes (unless `orphansOnly`), unfinished
   * ones (orphans) ended.
   */
  async #holdChildren(
    root: AgentRecord,
    parent: { readonly id: string; readonly depth: number },
    children: readonly KnownChild[],
    scan: AdoptionScan,
    orphansOnly = false,
  ): Promise<void> {
    for (const child of children) {
      if (scan.left <= 0 || hasEnded(root)) return;
      if (this.records.has(child.agentId)) continue;
      scan.left -= 1;
      let childEvents = await this.engine.journal(child.agentId);
      if (hasEnded(root) || this.records.has(child.agentId)) continue;
      const childStarted = childEvents[0]?.type === 'Started' ? childEvents[0] : undefined;
      const name = child.agent ?? childStarted?.definition.name;
      if (name === undefined) continue;
      const orphan = !childEvents.some(isTerminal);
      if (!orphan && orphansOnly) continue;
      if (orphan) {
        // Never started (no journal): nothing to end. Otherwise ended here, once.
        if (childStarted === undefined || this.engine.endJournal === undefined) continue;
        await this.engine.endJournal(child.agentId, orphanOutcome(child.agentId, parent.id));
        childEvents = await this.engine.journal(child.agentId);
        if (hasEnded(root) || this.records.has(child.agentId)) continue;
      }
      if (root.tree !== undefined) root.tree.subagents += 1;
      await this.#holdEnded(root, parent, child.agentId, name, childEvents, scan, orphan);
    }
  }

  /** Hands a resolved record to the engine, with the instructions sent so far. */
  #run(record: AgentRecord): void {
    if (record.state !== 'pending') return;
    record.state = 'running';
    this.engine.run(actorSpec(record.spec, this.#tracing?.actorContext(record.id)));
    for (const { text, index, resolve, reject } of record.held.splice(0))
      this.#deliver(record, text, index).then(resolve, reject);
  }

  async #deliver(record: AgentRecord, text: string, at?: number): Promise<number> {
    const index = await this.engine.deliver(record.id, {
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
    const record = this.#live(agentId);
    if (!record || record.state === 'ended') {
      throw new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId });
    }
    const tooLarge = instructionTooLarge(agentId, text);
    if (tooLarge) throw tooLarge;
    // Redis closed at close(): nothing waits for this instruction. A full queue is the sender's to
    // know about: `send` has no promise, so it hears of it as an event.
    const dropped = (error: unknown): void => {
      if (error instanceof UserError && error.code === 'instruction_queue_full') {
        this.#emitter.emit(
          'agent:dropped',
          extend(this.#ref(record), { text, error: serializeError(error) }),
        );
      }
    };
    if (record.state === 'pending') {
      record.held.push({ text, resolve: () => {}, reject: dropped });
      return;
    }
    this.engine.deliver(agentId, { type: 'instruction', text }).catch(dropped);
  }

  /**
   * Counts what an ended agent spent itself. Without runLimits no receipt is sent to count
   * (nothing listens for them): `runUsage` counts it when the agent ends, so its totals are never
   * left at 0. Receipts sent (for runLimits or the usage sink) were counted and delivered as they
   * came, but one journalled whose signal died with its thread or worker never came, while its
   * outcome (from the journal) holds it: what the outcome says beyond the receipts that came is
   * counted against runLimits and given to the sink now, as one record.
   */
  #countEnd(record: AgentRecord, outcome: AgentOutcome): void {
    const own = ownSpend(outcome);
    const limited = this.budget.limited;
    if (!limited) this.budget.add(own.usage.inputTokens + own.usage.outputTokens, own.costUsd);
    // Receipts are sent for runLimits, the usage sink and `usage` listeners alike: without any of
    // them, nothing was sent and nothing is owed.
    if (!this.#wantedSignals.has('receipt')) return;
    // The engine's own count of runLimits (redis: the workers' hash) gets its top-up too.
    if (limited) this.engine.countEnded?.(record.id, own);
    const unreported = unreportedSpend(own, record.reported);
    if (unreported === undefined) return;
    const request = {
      round: outcome.rounds,
      step: undefined,
      usage: unreported.usage,
      costUsd: unreported.costUsd,
      latencyMs: 0,
      endedAt: Date.now(),
      unreported: true,
    } as const;
    const sink = this.#options.usageSink;
    if (sink) deliverUsage(sink, this.#usageRecord(record, request));
    emitUnreportedUsage(this.#emitter, record.handle, this.#ref(record), request);
    if (limited)
      this.#count(unreported.usage.inputTokens + unreported.usage.outputTokens, unreported.costUsd);
  }

  /** Counts a request against `runLimits`; once they are spent, says so and cancels every agent. */
  #count(tokens: number, costUsd: number | null): void {
    const spent = this.budget.add(tokens, costUsd);
    if (spent === undefined) return;
    this.#emitter.emit('supervisor:budget', spent);
    const open = [...this.records.values()].filter((record) => !isEnded(record));
    for (const record of open) this.#cancel(record.id, `the run budget is spent: ${spent.message}`);
  }

  #cancel(agentId: string, reason: string): void {
    const record = this.#live(agentId);
    if (!record || record.cancelReason !== undefined) return;
    record.cancelReason = reason;
    for (const child of record.children) this.#cancel(child, `parent cancelled: ${reason}`);
    if (record.state === 'pending') {
      this.#fail(record, 'cancelled', cancelledError(reason));
      return;
    }
    this.engine.deliver(agentId, { type: 'cancel', reason }).catch(() => {
      // The engine cannot reach the agent: the grace timer stops it.
    });
    if (hasEnded(record)) return;
    record.cancelTimer = setTimeout(() => {
      if (!hasEnded(record)) this.engine.stop(agentId, reason);
    }, this.#options.graceMs);
    record.cancelTimer.unref();
  }

  /** The approval book, once `requestId` is known to be a request of `agentId`. */
  #ownApproval(agentId: string, requestId: string): ApprovalBook {
    if (!this.approvals.pending(agentId).some((request) => request.requestId === requestId)) {
      throw new UserError(
        'approval_not_pending',
        `Agent ${agentId} has no approval request ${requestId} waiting: it was decided, timed out, or the agent ended`,
        { agentId, requestId },
      );
    }
    return this.approvals;
  }

  #fail(record: AgentRecord, reason: FailureReason, error: SerializedError): void {
    this.#finish(record, failedOutcome(record.id, reason, error));
  }

  #finish(record: AgentRecord, ended: AgentOutcome): void {
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
    // A retry's outcome carries the requests of the attempt it continues, which that attempt's
    // outcome counted: it says so, and the run counts only what it spent itself.
    const outcome =
      record.inherited !== undefined && ended.inherited === undefined
        ? extend(ended, { inherited: record.inherited })
        : ended;
    rollUpUsage(this.records, record, outcome);
    this.#countEnd(record, outcome);
    this.#retire(record);
    this.#tracing?.ended(record.id, outcome);
    this.approvals.ended(record.id);
    const event = extend(this.#ref(record), { outcome });
    this.#emitter.emit(outcome.status === 'completed' ? 'agent:completed' : 'agent:failed', event);
    record.handle.emit('ended', event);
    // Nothing is emitted for it any more: its listeners' closures need not live as long as the handle.
    record.handle.removeAllListeners();
    record.settle(outcome);
    if (outcome.status === 'failed' && record.cancelReason === undefined) {
      // A parent that failed (out of time, steps or budget, crashed) can no longer await its
      // subagents: as on a cancel, they are cancelled rather than left running, unowned, until close().
      const reason = `parent failed (${outcome.reason}): ${outcome.error.message}`;
      for (const child of record.children) this.#cancel(child, reason);
    }
    this.#evict();
  }

  /**
   * Holds `record` as an {@link EndedRecord} from now on, and queues for eviction what its end
   * leaves unneeded: itself, its ancestors it was the last live descendant of, its ended children.
   */
  #retire(record: AgentRecord): void {
    const ended = endedRecord(record);
    this.records.set(record.id, ended);
    this.#queueIfUnneeded(ended);
    for (let above = this.#parentOf(ended); above !== undefined; above = this.#parentOf(above)) {
      above.liveDescendants -= 1;
      if (isEnded(above)) this.#queueIfUnneeded(above);
    }
    for (const childId of record.children) {
      const child = this.records.get(childId);
      if (child !== undefined && isEnded(child)) this.#queueIfUnneeded(child);
    }
  }

  /**
   * Nothing needs an ended agent once no live parent may await it (`await_agents`) and no live
   * descendant's usage rolls up through it.
   */
  #unneeded(record: EndedRecord): boolean {
    const parent = this.#parentOf(record);
    return record.liveDescendants === 0 && (parent === undefined || isEnded(parent));
  }

  #queueIfUnneeded(record: EndedRecord): void {
    if (this.#options.retainEndedAgents === Number.POSITIVE_INFINITY) return;
    if (this.#unneeded(record)) this.#evictable.add(record.id);
  }

  /** Forgets the oldest unneeded ended agents past `retainEndedAgents`. */
  #evict(): void {
    const keep = this.#options.retainEndedAgents;
    for (const id of this.#evictable) {
      if (this.#evictable.size <= keep) return;
      this.#evictable.delete(id);
      const record = this.records.get(id);
      if (record === undefined || !isEnded(record) || !this.#unneeded(record)) continue;
      this.records.delete(id);
      if (record.named) this.#evictedIds.add(id);
    }
  }

  /** The usage sink's record of `request`, one of `record`'s model requests (or its unreported ones). */
  #usageRecord(record: AgentRecord, request: UsageRequest): UsageRecord {
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
      request,
    );
  }

  /** What a host call `callId` runs with. */
  #hostToolContext(callId: string | undefined): HostToolContext {
    return {
      hostTools: this.#options.hostTools,
      agents: this.records,
      maxDepth: this.#options.maxDepth,
      maxChildren: this.#options.maxChildren,
      maxSubagents: this.#options.maxSubagents,
      spawn: (agent, options) => this.spawn(agent, options, callId === undefined ? undefined : { callId }),
      instruct: (agentId, text) => this.instruct(agentId, text),
    };
  }

  /** What the engine may ask and tell: its agents' reports and ends, host tools, complete_task. */
  #engineHost(): EngineHost {
    const running = (agentId: string): AgentRecord | undefined => {
      const record = this.#live(agentId);
      return record?.state === 'running' ? record : undefined;
    };
    return {
      closing: () => this.#closed,
      report: (reported) => {
        const record = running(reported.agentId);
        if (!record) return;
        const report = maskedReport(reported);
        if (this.#tracing) traceReport(this.#tracing, report);
        if (report.type === 'approval') this.approvals.requested(this.#ref(record), report.request);
        else if (report.type === 'decided') {
          const { type: _type, agentId: _agentId, ...decided } = report;
          this.approvals.decided(extend(this.#ref(record), decided));
        } else emitAgentReport(this.#emitter, record.handle, this.#ref(record), report);
        if (report.type !== 'receipt') return;
        record.reported.usage = addUsage(record.reported.usage, report.usage);
        record.reported.costUsd += report.costUsd ?? 0;
        const sink = this.#options.usageSink;
        if (sink)
          deliverUsage(
            sink,
            this.#usageRecord(record, {
              round: report.round,
              step: report.step,
              usage: report.usage,
              costUsd: report.costUsd,
              latencyMs: report.latencyMs,
              endedAt: report.endedAt,
              ...(report.errorCode === undefined ? {} : { errorCode: report.errorCode }),
            }),
          );
        if (this.budget.limited) this.#count(report.inputTokens + report.outputTokens, report.costUsd);
      },
      ended: (agentId, outcome) => {
        const record = running(agentId);
        if (record) this.#finish(record, maskedOutcome(outcome));
      },
      lost: (agentId, lostCause) => {
        const record = running(agentId);
        if (!record) return 'ended';
        const cause = maskedCause(lostCause);
        // Its result delivered or its cancel under way, it ends so, and its journal must say so. The
        // engine settles it (`ended`) with what its journal says it spent and writes the end where the
        // runner did not; built here, it would say 0 tokens spent. One lost while the supervisor
        // closes is not journalled as ended: `troupe resume` continues it.
        if (record.completion) return completedOutcome(agentId, record.completion.value);
        if (record.cancelReason !== undefined)
          return failedOutcome(agentId, 'cancelled', cancelledError(record.cancelReason));
        if (this.#closed) this.#fail(record, 'crashed', cause);
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
      toolSpan: (agentId, name, callId, at) => this.#tracing?.toolSpan(agentId, name, callId, at),
      callHostTool: (agentId, name, args, callId, resume) => {
        if (callId !== undefined && resume !== true) this.#tracing?.hostToolCall(agentId, name, callId);
        const run = () =>
          runHostTool(this.#hostToolContext(callId), agentId, name, args, {
            ...(callId === undefined ? {} : { callId }),
            ...(resume === true ? { resume } : {}),
          });
        // The closure runs under the call's execute_tool span: spans it makes are the call's.
        return this.#tracing && callId !== undefined ? this.#tracing.inToolSpan(agentId, callId, run) : run();
      },
      emit: (name, ...emitted) => {
        const args = maskedEngineEvent(name, emitted);
        if (this.#tracing) traceEngineEvent(this.#tracing, name, args);
        (this.#emitter.emit as (name: string, ...rest: unknown[]) => boolean).call(
          this.#emitter,
          name,
          ...args,
        );
      },
    };
  }
}

/** What one resume's adoption has read: its journal budget, and the journals its searches left unread. */
interface AdoptionScan {
  /** Journals of children it may still read (`MAX_ADOPTION_SCAN_JOURNALS` at first). */
  left: number;
  /** Journals `Engine.childStarts` did not examine, each named once in the resume's warning. */
  readonly notExamined: Set<string>;
}

/** UserError `instruction_too_large` when `text` is over {@link MAX_INSTRUCTION_BYTES}, else undefined. */
function instructionTooLarge(agentId: string, text: string): UserError | undefined {
  // A string of n UTF-16 units is at most 3n UTF-8 bytes: most never need counting.
  if (typeof text !== 'string' || text.length * 3 <= MAX_INSTRUCTION_BYTES) return undefined;
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= MAX_INSTRUCTION_BYTES) return undefined;
  return new UserError(
    'instruction_too_large',
    `The instruction for agent ${agentId} is ${size} bytes; an instruction may be at most ${MAX_INSTRUCTION_BYTES} bytes (1 MiB, MAX_INSTRUCTION_BYTES)`,
    { agentId, size, limit: MAX_INSTRUCTION_BYTES },
  );
}

/**
 * Throws UserError `invalid_option` for a call of the wrong shape, from JavaScript or a cast:
 * `spawn({ agent, task })` (a fan-out spec) read the options of undefined.
 */
function checkSpawnCall(agent: unknown, options: unknown): void {
  const spec = typeof agent === 'object' && agent !== null && 'agent' in agent && 'task' in agent;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new UserError(
      'invalid_option',
      `Expected spawn(agent, { task, ... }), got ${describeValue(options)} as its options${spec ? ' (a { agent, task } spec is what fanOut takes)' : ''}`,
      { option: 'options' },
    );
  }
  const { task, context, metadata } = options as { task?: unknown; context?: unknown; metadata?: unknown };
  if (typeof task !== 'string') {
    throw new UserError(
      'invalid_option',
      `Expected the spawn's \`task\` to be a string, got ${describeValue(task)}`,
      {
        option: 'task',
      },
    );
  }
  checkSpawnInputSize(agent, task, Array.isArray(context) ? context : [], metadata);
}

/** `metadata` as JSON text ('' when absent, or when it cannot be: the journal names that later). */
function metadataText(metadata: unknown): string {
  if (metadata === undefined) return '';
  try {
    return JSON.stringify(metadata) ?? '';
  } catch {
    return '';
  }
}

/**
 * Throws UserError `spawn_input_too_large` when task, context and metadata (as JSON) are over
 * {@link MAX_SPAWN_INPUT_BYTES}: each is journalled in Started and, on redis, copied into the job.
 */
function checkSpawnInputSize(
  agent: unknown,
  task: string,
  context: readonly unknown[],
  metadata: unknown,
): void {
  const sections = context.filter((section): section is string => typeof section === 'string');
  const meta = metadataText(metadata);
  if (meta !== '') sections.push(meta);
  // A string of n UTF-16 units is at most 3n UTF-8 bytes: most never need counting.
  const units = sections.reduce((sum, section) => sum + section.length, task.length);
  if (units * 3 <= MAX_SPAWN_INPUT_BYTES) return;
  const size = sections.reduce(
    (sum, section) => sum + Buffer.byteLength(section, 'utf8'),
    Buffer.byteLength(task, 'utf8'),
  );
  if (size <= MAX_SPAWN_INPUT_BYTES) return;
  const name = typeof agent === 'string' ? agent : (agent as { name?: unknown } | null)?.name;
  throw new UserError(
    'spawn_input_too_large',
    `The task, context and metadata of a spawn of ${typeof name === 'string' ? name : 'an agent'} are ${size} bytes; a spawn's input may be at most ${MAX_SPAWN_INPUT_BYTES} bytes (4 MiB, MAX_SPAWN_INPUT_BYTES): pass large inputs as files the agent reads`,
    { ...(typeof name === 'string' ? { agent: name } : {}), size, limit: MAX_SPAWN_INPUT_BYTES },
  );
}
