/**
 * The thread engine: agents run as actors in this process's worker threads (piscina actor hosts,
 * see host-pool.ts), placed on the least loaded thread. Instructions wait in a mailbox per agent on
 * the main thread; provider admission is one queue per provider key on the main thread, shared by
 * every thread over the hosts' admission ports.
 *
 * A thread that dies takes only its actors, which are restarted from their journals on a live
 * thread. The death is charged to the agents that caused it (see blame.ts): an agent running a
 * tool in the thread when it died, the one agent whose provider code a blocked thread's stack
 * shows (stack-probe.ts), or the only agent on it. A charged agent is quarantined: from
 * then on it runs alone on a quarantine thread (or beside an agent of its own tree, when none is
 * free: they may be waiting on each other; one that waits `quarantineWaitMs` for one fails
 * `quarantine_wait_timeout`), so if it kills that one too no other agent goes with it, and after
 * `restart.maxRetries` charged deaths it fails with its own cause. Bystanders restart without
 * using their cap (up to `maxBystanderRestarts` times).
 */
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { describeValue, type SerializedError, SystemError, serializeError, UserError } from '../../errors.ts';
import type { AuditEvent } from '../../journal/events.ts';
import { forkedInputs, forkedTotals, writeFork } from '../../journal/fork.ts';
import { readJournal } from '../../journal/reader.ts';
import { onSecretValues } from '../../journal/redact.ts';
import type { UsageTotals } from '../../journal/usage.ts';
import { JournalWriter } from '../../journal/writer.ts';
import { cancelledError, failedOutcome } from '../../loop/outcome.ts';
import type { AgentOutcome, FailureReason } from '../../loop/types.ts';
import { killProcessTree } from '../../mcp/process-tree.ts';
import { unwatchServerGroup, watchServerGroup } from '../../mcp/server-groups.ts';
import type {
  ActorSpec,
  AgentMessage,
  HostEventMessage,
  HostStats,
  OptionalSignal,
  SupervisorCallbackApi,
} from '../../protocol/messages.ts';
import { MAX_PROVIDER_PAUSE_MS } from '../../providers/constants.ts';
import { COMPLETE_TASK, WAIT_FOR_INSTRUCTION } from '../../tools/builtin/orchestration.ts';
import { ForwardedSecrets } from '../actor/forwarded-secrets.ts';
import type {
  ChildStarts,
  Engine,
  EngineContext,
  EngineDescription,
  EngineHost,
  EngineOptions,
  JournalScanBounds,
} from '../engine.ts';
import { Admission } from './admission.ts';
import { AdmissionServer } from './admission-server.ts';
import { culpritProviders, pendingWorkOf } from './blame.ts';
import { ChildJournalIndex } from './child-index.ts';
import { HostPool, type HostRecord } from './host-pool.ts';
import { InboxServer } from './inbox-server.ts';
import { journalEnd, journalOutcome } from './journal-end.ts';
import { JournalPrecreator } from './journal-precreator.ts';
import { Mailbox } from './mailbox.ts';
import type { PreparedThreadOptions } from './options.ts';

/** Thread agent ids: one file name (`<id>.jsonl`), so no path separator and no control character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it rejects
const THREAD_AGENT_ID = /^[^/\\\u0000-\u001f\u007f]{1,200}$/;

/**
 * Agents queued in one microtask run that are placed at once rather than when the run ends: a
 * fan-out's launches run back to back on the main thread, and without this the threads wait idle
 * for all of them (tens of milliseconds for a thousand agents) before they get the first.
 */
const SCHEDULE_BATCH = 128;

/** Options of the thread engine. */
export type ThreadEngineOptions = EngineOptions & PreparedThreadOptions;

/** Starts tried for the replacement of a dead thread before the engine does without it. */
const REPLACEMENT_ATTEMPTS = 3;

/** The engine's state of one agent it holds. */
interface ThreadAgent {
  spec: ActorSpec;
  readonly mailbox: Mailbox;
  /**
   * queued: waiting for a place (or for its restart backoff); running: on `host`; restarting: its
   * thread died and the blame is being read from its journal.
   */
  state: 'queued' | 'running' | 'restarting';
  host: HostRecord | undefined;
  /** Thread deaths charged to it. */
  charged: number;
  /** Thread deaths it restarted after as a bystander. */
  bystander: number;
  /** Runs alone on a quarantine thread (it was charged with a thread death). */
  quarantined: boolean;
  /** Ends its wait for a quarantine thread (`quarantineWaitMs`); set while it waits for one. */
  quarantineTimer?: NodeJS.Timeout;
  /**
   * A session's turn cancels whose turn has not been reported ended (`turn` signal): sent to its
   * host, and again to the host it restarts on if that one dies first, since the cancel died with
   * it and the restarted agent would run the turn on.
   */
  turnCancels?: Map<number, string>;
}

/**
 * How long an agent the supervisor ended when its thread was terminated (its result delivered, its
 * cancel under way: the grace timer's `cancel_timeout`, a missed heartbeat) waits for the thread to
 * be gone before it is settled: Node's `worker.terminate()` waits for a thread blocked in a system
 * call to return. Past it, the agent is settled with what its journal says so far, and nothing is
 * written to the journal, which the thread may still write.
 */
const TERMINATED_THREAD_WAIT_MS = 10_000;

/** Turn cancels kept for an agent until their turns end; more are dropped (each names one turn). */
const MAX_HELD_TURN_CANCELS = 64;

export class ThreadEngine implements Engine {
  readonly backend = 'threads';
  readonly #options: ThreadEngineOptions;
  readonly #host: EngineHost;
  /** Credentials registered in hosts' threads (forwarded-secrets.ts). */
  readonly #secrets = new ForwardedSecrets();
  /** The journals' ids by the parent they name, read once each (made by the first search). */
  #childIndex: ChildJournalIndex | undefined;
  readonly #context: EngineContext;
  readonly #agents = new Map<string, ThreadAgent>();
  readonly #queue: ThreadAgent[] = [];
  /** Quarantined agents waiting for a quarantine thread of their own. */
  readonly #quarantine: ThreadAgent[] = [];
  /** Tools whose calls do not run in the thread: a call of one pending is no evidence. */
  readonly #elsewhere: ReadonlySet<string>;
  readonly #admission: Admission;
  readonly #pausedUntil = new Map<string, number>();
  /**
   * What each live host runs outside the thread, killed if the host dies: its stdio MCP servers
   * (by pid) and its commands' process groups (by minus their id, as `process.kill` takes a group).
   */
  readonly #children = new Map<HostRecord, Set<number>>();
  /** Each host's inbox server: the waits a host's events batch carries are parked there. */
  readonly #inboxes = new WeakMap<HostRecord, InboxServer>();
  #pool: HostPool | undefined;
  #starting: Promise<void> | undefined;
  #scheduleQueued = false;
  #quarantineHostStarting = false;
  /** Replacement threads starting. */
  #replacing = 0;
  /** Why the last replacement thread could not start, after all its attempts. */
  #startFailure: SerializedError | undefined;
  /**
   * The optional signals the supervisor listens for. Hosts get it in their config: the pool clones
   * this array's contents when it starts a host, so a host started later gets the current set.
   */
  readonly #wantedSignals: OptionalSignal[] = [];
  /**
   * Every value registered for masking in this thread (the program's `registerSecretValues`, the
   * supervisor's providers and MCP servers, values hosts forwarded): hosts get them in their config
   * (cloned when a host starts, as `#wantedSignals`) and each one added later, so the journals
   * and outputs written in agents' threads mask them too. At most MAX_LITERAL_SECRETS: this
   * thread's registry refuses more.
   */
  readonly #secretValues: string[] = [];
  #unwatchSecrets: (() => void) | undefined;
  /** Creates new agents' journal files on this thread, so hosts never create files at once. */
  readonly #precreator: JournalPrecreator;

  constructor(options: ThreadEngineOptions, context: EngineContext) {
    this.#options = options;
    this.#precreator = new JournalPrecreator(options.journalDir);
    this.#context = context;
    this.#host = context.host;
    this.#elsewhere = new Set([COMPLETE_TASK, WAIT_FOR_INSTRUCTION, ...context.hostTools.map((t) => t.name)]);
    this.#admission = new Admission(options.limits, (provider, retryAfterMs) =>
      this.#host.emit('provider:backoff', { provider, retryAfterMs }),
    );
  }

  checkAgentId(id: string): void {
    // An id names its journal file `<journalDir>/<id>.jsonl`: it must stay one file name in that
    // folder (no separator, so `../x` cannot write elsewhere). The supervisor checks that it is new.
    if (!THREAD_AGENT_ID.test(id)) {
      throw new UserError(
        'invalid_agent_id',
        `Expected an agent id of 1-200 characters with no '/', '\\' or control characters, got ${describeValue(id)}`,
        { agentId: id },
      );
    }
  }

  start(): Promise<void> {
    this.#starting ??= this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const options = this.#options;
    const admissionKeys = this.#admission.keys;
    // Called at once with the values known so far (no host runs yet), then with each one added.
    this.#unwatchSecrets = onSecretValues((values) => {
      this.#secretValues.push(...values);
      for (const host of this.#pool?.hosts ?? []) {
        this.#pool?.call(host, (api) => api.learnSecrets(values)).catch(() => {});
      }
    });
    const pool = new HostPool({
      threads: options.threads,
      dedicatedThreads: options.quarantineThreads,
      resourceLimits: options.resourceLimits,
      heartbeatIntervalMs: options.heartbeatIntervalMs,
      heartbeatTimeoutMs: options.heartbeatTimeoutMs,
      startTimeoutMs: options.threadStartTimeoutMs,
      execArgv: options.execArgv,
      config: {
        providers: options.providers,
        admissionKeys,
        toolModules: options.toolModules,
        hostTools: this.#context.hostTools,
        journalDir: options.journalDir,
        fsync: options.fsync,
        cwd: options.cwd,
        wantedSignals: this.#wantedSignals,
        secretValues: this.#secretValues,
      },
      callbacks: this.#callbacks(),
      serveAdmission: (_host, port: MessagePort) => new AdmissionServer(this.#admission, admissionKeys, port),
      serveInbox: (host, port: MessagePort) => {
        const server = new InboxServer(
          port,
          (agentId) => this.#runningMailbox(agentId),
          (request) => this.#host.report({ type: 'approval', agentId: request.agentId, request }),
        );
        this.#inboxes.set(host, server);
        return server;
      },
      onMessage: (host, message) => this.#onHostMessage(host, message),
    });
    this.#pool = pool;
    pool.on('host:started', (host) => this.#host.emit('thread:started', { hostId: host.id }));
    pool.on('host:died', (host, cause) => this.#onHostDied(host, cause));
    await Promise.all(Array.from({ length: options.threads }, () => pool.startHost()));
    this.#schedule();
  }

  run(spec: ActorSpec): void {
    const agent: ThreadAgent = {
      spec,
      mailbox: new Mailbox(this.#options.maxPendingInstructions, spec.agentId),
      state: 'queued',
      host: undefined,
      charged: 0,
      bystander: 0,
      quarantined: false,
    };
    this.#agents.set(spec.agentId, agent);
    this.#queue.push(agent);
    if (this.#queue.length % SCHEDULE_BATCH === 0 && this.#pool !== undefined) this.#schedule();
    else this.#scheduleSoon();
  }

  async deliver(agentId: string, message: AgentMessage): Promise<number | undefined> {
    const agent = this.#agents.get(agentId);
    if (!agent) return undefined;
    if (message.type === 'instruction') return agent.mailbox.send(message.text, message.index);
    if (message.type === 'approval') {
      agent.mailbox.decide(message.requestId, message.decision);
      return undefined;
    }
    if (message.type === 'cancel_turn') {
      const { turn, reason } = message;
      const held = agent.turnCancels ?? new Map<number, string>();
      if (held.size < MAX_HELD_TURN_CANCELS || held.has(turn)) held.set(turn, reason);
      agent.turnCancels = held;
      const host = agent.state === 'running' ? agent.host : undefined;
      if (host !== undefined) this.#cancelTurns(host, agentId, [[turn, reason]]);
      return undefined;
    }
    if (agent.state !== 'running' || !agent.host) {
      const ran = agent.spec.resume === true || agent.state === 'restarting';
      this.#release(agent);
      const error = cancelledError(message.reason);
      // Only an agent that ran (restarting, or queued after a restart) has a journal to end: one
      // never placed has none, and a fan-out's cancel of thousands queued reads no file.
      this.#host.ended(
        agentId,
        ran ? this.#journalEnd(agentId, 'cancelled', error) : failedOutcome(agentId, 'cancelled', error),
      );
      return undefined;
    }
    const host = agent.host;
    agent.mailbox.abandon();
    this.#pool?.call(host, (api) => api.cancel(agentId, message.reason)).catch(() => {});
    return undefined;
  }

  /**
   * Sends a session's turn cancels to the host running it. They stay in the agent's `turnCancels`
   * until their turn is reported ended: one sent to a host that then dies is sent again to the
   * host the agent restarts on (see #schedule), where the turn it resumes is cancelled.
   */
  #cancelTurns(host: HostRecord, agentId: string, cancels: Iterable<readonly [number, string]>): void {
    for (const [turn, reason] of cancels)
      this.#pool?.call(host, (api) => api.cancelTurn(agentId, turn, reason)).catch(() => {});
  }

  /** A session reported turn `turn` ended (answered or cancelled): its cancels are settled. */
  #turnEnded(agentId: string, turn: number): void {
    const held = this.#agents.get(agentId)?.turnCancels;
    if (held === undefined) return;
    for (const waiting of held.keys()) if (waiting <= turn) held.delete(waiting);
  }

  stop(agentId: string, _reason: string): void {
    const host = this.#agents.get(agentId)?.host;
    if (!host?.alive) return;
    const cause = new SystemError(
      'cancel_timeout',
      `Agent ${agentId} did not stop within ${this.#options.graceMs} ms of cancel`,
      { agentId, hostId: host.id },
    ).toJSON();
    // Its death ends it cancelled, settled and journalled once the thread is gone (see #endLost).
    this.#pool?.terminate(host, cause).catch(() => {});
  }

  async journal(agentId: string): Promise<AuditEvent[]> {
    try {
      return readJournal(this.#journalFile(agentId)).events;
    } catch (error) {
      if ((error as { code?: unknown }).code === 'journal_not_found') return [];
      throw error;
    }
  }

  async childStarts(parentId: string, bounds: JournalScanBounds): Promise<ChildStarts> {
    this.#childIndex ??= new ChildJournalIndex(this.#options.journalDir);
    return this.#childIndex.childStarts(parentId, bounds);
  }

  async endJournal(agentId: string, outcome: AgentOutcome): Promise<AgentOutcome> {
    return journalOutcome(this.#journalFile(agentId), outcome, this.#options.fsync);
  }

  async forkJournal(from: string, to: string): Promise<UsageTotals> {
    const target = this.#journalFile(to);
    const inputs = forkedInputs(await this.journal(from), to, from);
    const totals = forkedTotals(inputs);
    if (inputs.length === 0 || (existsSync(target) && statSync(target).size > 0)) return totals;
    const draft = `${target}.fork`;
    rmSync(draft, { force: true });
    const journal = JournalWriter.open(draft, {
      fsync: this.#options.fsync === 'never' ? 'never' : 'always',
    });
    try {
      writeFork(journal, inputs);
    } finally {
      journal.close();
    }
    renameSync(draft, target);
    return totals;
  }

  wantSignals(kinds: readonly OptionalSignal[]): void {
    this.#wantedSignals.splice(0, this.#wantedSignals.length, ...kinds);
    // On the control port, so it reaches each host before any spawn posted after it.
    for (const host of this.#pool?.hosts ?? []) {
      this.#pool?.call(host, (api) => api.wantSignals(kinds)).catch(() => {});
    }
  }

  async measure(): Promise<HostStats[]> {
    await this.start();
    return this.#pool ? this.#pool.measure() : [];
  }

  async describe(): Promise<EngineDescription> {
    return { backend: 'threads', threads: this.#options.threads };
  }

  async close(): Promise<void> {
    // The pool closes before start-up is waited for: a thread still loading is stopped, not waited
    // for (seconds on a busy machine), so a Ctrl-C during start-up acts at once. The pool exists as
    // soon as start() was called, and its close is idempotent.
    await this.#pool?.close(this.#options.graceMs);
    if (this.#starting) await this.#starting.catch(() => {});
    this.#unwatchSecrets?.();
    // Threads that had to be terminated could not stop their MCP servers and commands.
    for (const targets of this.#children.values()) killOrphans(targets);
    this.#children.clear();
    this.#admission.close();
    this.#precreator.close();
    for (const agent of this.#agents.values()) {
      clearTimeout(agent.quarantineTimer);
      agent.mailbox.abandon();
    }
    if (this.#options.ownsJournalDir) rmSync(this.#options.journalDir, { recursive: true, force: true });
  }

  #journalFile(agentId: string): string {
    return path.join(this.#options.journalDir, `${agentId}.jsonl`);
  }

  /**
   * The outcome of an agent the engine ends while no thread runs it (see {@link journalEnd}), with
   * its terminal event appended to its journal.
   */
  #journalEnd(agentId: string, reason: FailureReason, error: SerializedError): AgentOutcome {
    return journalEnd(this.#journalFile(agentId), agentId, reason, error, this.#options.fsync);
  }

  /**
   * Settles an agent of dead thread `host` with the end the supervisor gave it (its result
   * delivered, its cancel under way), filled with what its journal says it spent, and journals that
   * end: its loop died with the thread before it wrote it, so without this a resume would run again
   * an agent that finished or was cancelled, and the outcome would say it spent nothing. Done once
   * the thread runs no more of its code (at once, unless it is being terminated), so an end the
   * thread wrote first is found and is the one delivered. A thread that could not be terminated, or
   * is not gone within TERMINATED_THREAD_WAIT_MS, may still write: its journal is only read then.
   * Only a thread's death pays for it.
   */
  #endLost(host: HostRecord, outcome: AgentOutcome): void {
    const end = (gone: boolean): void => {
      const file = this.#journalFile(outcome.agentId);
      this.#host.ended(outcome.agentId, journalOutcome(file, outcome, this.#options.fsync, gone));
    };
    const stopping = host.stopping;
    if (stopping === undefined) {
      end(true);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), TERMINATED_THREAD_WAIT_MS);
    });
    void Promise.race([stopping, waited]).then((gone) => {
      clearTimeout(timer);
      end(gone);
    });
  }

  /** Forgets an agent: out of the queue, off its host, its parked wait answered. */
  #release(agent: ThreadAgent): void {
    this.#agents.delete(agent.spec.agentId);
    const queue = agent.quarantined ? this.#quarantine : this.#queue;
    const index = agent.state === 'queued' ? queue.indexOf(agent) : -1;
    if (index >= 0) queue.splice(index, 1);
    agent.host?.agents.delete(agent.spec.agentId);
    agent.host = undefined;
    agent.mailbox.abandon();
    clearTimeout(agent.quarantineTimer);
    agent.quarantineTimer = undefined;
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
    if (!pool || this.#host.closing()) return;
    const placed: { agent: ThreadAgent; host: HostRecord }[] = [];
    const batches = new Map<HostRecord, ActorSpec[]>();
    const place = (agent: ThreadAgent, host: HostRecord): void => {
      clearTimeout(agent.quarantineTimer);
      agent.quarantineTimer = undefined;
      agent.state = 'running';
      agent.host = host;
      host.agents.add(agent.spec.agentId);
      const batch = batches.get(host);
      if (batch) batch.push(agent.spec);
      else batches.set(host, [agent.spec]);
      placed.push({ agent, host });
    };
    // Taken once: `pool.hosts` builds a new array, and no host starts or dies during the pass.
    const hosts = pool.hosts;
    const shared = hosts.filter((host) => !host.dedicated);
    while (this.#queue.length > 0) {
      const host = this.#pickHost(shared);
      if (!host) break;
      const agent = this.#queue.shift();
      if (agent?.state === 'queued') place(agent, host);
    }
    const startFailure = this.#startFailure;
    if (shared.length === 0 && this.#replacing === 0 && startFailure !== undefined) {
      // No thread left and none coming: waiting would be for ever.
      for (const agent of this.#queue.splice(0)) {
        if (agent.state !== 'queued') continue;
        this.#release(agent);
        const { agentId } = agent.spec;
        this.#host.ended(agentId, this.#journalEnd(agentId, 'crashed', startFailure));
      }
    }
    const idle = hosts.filter((host) => host.dedicated && host.agents.size === 0);
    if (this.#quarantine.length > 0) {
      // A quarantined agent with no quarantine thread free joins the one an agent of its own tree
      // holds: a parent in await_agents (or a child parked on its parent's instruction) would
      // otherwise hold the thread the other waits for, and neither would ever end. Agents of other
      // trees still wait for a thread of their own.
      const held = this.#quarantineHostsByTree(hosts);
      const parked = this.#parkedQuarantineHosts(hosts);
      let dedicated = 0;
      for (const host of hosts) if (host.dedicated && host.ready) dedicated += 1;
      const allStarted = dedicated >= this.#options.quarantineThreads;
      for (const agent of this.#quarantine.splice(0)) {
        if (agent.state !== 'queued') continue;
        const tree = this.#treeOf(agent);
        const host = idle.shift() ?? held.get(tree) ?? parked.shift();
        if (host === undefined) {
          this.#quarantine.push(agent);
          // Bounded once every quarantine thread runs and is held: a thread's start has its own.
          if (allStarted) {
            agent.quarantineTimer ??= setTimeout(
              () => this.#quarantineWaitEnded(agent),
              this.#options.quarantineWaitMs,
            );
          }
          continue;
        }
        place(agent, host);
        held.set(tree, host);
      }
    }
    if (this.#quarantine.length > 0) this.#startQuarantineHost(hosts);
    else for (const host of idle) pool.retire(host);
    // Every spawn is posted before any listener of `agent:started` can post a cancel for it.
    for (const [host, specs] of batches) {
      pool.spawnMany(host, specs).catch(() => {
        // The host died: its death handler restarts or fails these agents.
      });
    }
    // After the spawns on the same port: the host has the agent when its turn cancels arrive.
    for (const { agent, host } of placed) {
      if (agent.turnCancels !== undefined && agent.turnCancels.size > 0)
        this.#cancelTurns(host, agent.spec.agentId, agent.turnCancels);
    }
    // New agents' journal files are created here, one thread for all hosts, while they start.
    if (batches.size > 0) {
      this.#precreator.add(
        [...batches.values()].map((specs) =>
          specs.filter((spec) => !spec.resume).map((spec) => spec.agentId),
        ),
      );
    }
    for (const { agent, host } of placed) {
      const { agentId, resume } = agent.spec;
      this.#host.report({ type: 'started', agentId, hostId: host.id, resumed: resume });
    }
  }

  /** The quarantine host each agent tree has an agent running on (the tree's topmost agent held). */
  #quarantineHostsByTree(hosts: readonly HostRecord[]): Map<string, HostRecord> {
    const held = new Map<string, HostRecord>();
    for (const host of hosts) {
      if (!host.dedicated) continue;
      for (const agentId of host.agents) {
        const agent = this.#agents.get(agentId);
        if (agent?.state === 'running' && agent.host === host) held.set(this.#treeOf(agent), host);
      }
    }
    return held;
  }

  /**
   * Quarantine threads whose agents all wait for an instruction (an idle session, an agent in
   * wait_for_instruction): a blamed agent of another tree runs there rather than wait for as long
   * as they idle. It shares that thread with blamed agents only, so a death there costs no healthy
   * agent anything, and the parked ones, not running, are bystanders of one they did not cause.
   */
  #parkedQuarantineHosts(hosts: readonly HostRecord[]): HostRecord[] {
    const parked: HostRecord[] = [];
    for (const host of hosts) {
      if (!host.dedicated || host.agents.size === 0) continue;
      let idle = true;
      for (const agentId of host.agents) {
        const agent = this.#agents.get(agentId);
        if (agent?.state !== 'running' || agent.host !== host || !agent.mailbox.isWaiting) idle = false;
      }
      if (idle) parked.push(host);
    }
    return parked;
  }

  /** The id of the topmost ancestor of `agent` the engine still holds (its own id at the top). */
  #treeOf(agent: ThreadAgent): string {
    let top = agent;
    // Each parent is one level up: the walk ends at depth 0 at the latest.
    for (let depth = agent.spec.depth; depth > 0 && top.spec.parentId !== undefined; depth -= 1) {
      const parent = this.#agents.get(top.spec.parentId);
      if (parent === undefined) break;
      top = parent;
    }
    return top.spec.agentId;
  }

  /**
   * Fails a quarantined agent that waited `quarantineWaitMs` for a quarantine thread: agents of
   * other trees hold them all (an idle session, a long task), and would otherwise keep it waiting
   * for as long as they live. Its journal gets the Failed event, as when its loop ends.
   */
  #quarantineWaitEnded(agent: ThreadAgent): void {
    agent.quarantineTimer = undefined;
    const index = this.#quarantine.indexOf(agent);
    if (index < 0 || this.#agents.get(agent.spec.agentId) !== agent || agent.state !== 'queued') return;
    const { agentId } = agent.spec;
    const { quarantineWaitMs, quarantineThreads } = this.#options;
    const holders: string[] = [];
    for (const host of this.#pool?.hosts ?? []) if (host.dedicated) holders.push(...host.agents);
    this.#release(agent);
    const error = new SystemError(
      'quarantine_wait_timeout',
      `Agent ${agentId} was blamed for a thread death and waited ${quarantineWaitMs} ms for one of the ` +
        `${quarantineThreads} quarantine thread(s), held by ${holders.length > 0 ? holders.join(', ') : 'agents starting on them'}; ` +
        'raise `quarantineThreads` or `quarantineWaitMs`',
      { agentId, timeoutMs: quarantineWaitMs, quarantineThreads, holders },
    ).toJSON();
    this.#host.ended(agentId, this.#journalEnd(agentId, 'crashed', error));
  }

  /** Starts a quarantine thread when there are fewer than `quarantineThreads`. */
  #startQuarantineHost(hosts: readonly HostRecord[]): void {
    const pool = this.#pool;
    const running = hosts.filter((host) => host.dedicated).length;
    if (!pool || this.#quarantineHostStarting || running >= this.#options.quarantineThreads) return;
    this.#quarantineHostStarting = true;
    pool.startHost({ dedicated: true }).then(
      () => {
        this.#quarantineHostStarting = false;
        this.#schedule();
      },
      (error: unknown) => {
        this.#quarantineHostStarting = false;
        // No thread for them: the waiting agents fail rather than wait for ever.
        const cause = serializeError(error);
        for (const agent of this.#quarantine.splice(0)) {
          this.#release(agent);
          const { agentId } = agent.spec;
          this.#host.ended(agentId, this.#journalEnd(agentId, 'crashed', cause));
        }
      },
    );
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

  #runningMailbox(agentId: string): Mailbox | undefined {
    return this.#agents.get(agentId)?.mailbox;
  }

  #onHostMessage(host: HostRecord, message: HostEventMessage): void {
    switch (message.type) {
      case 'batch': {
        // Waits first: a listener of the turn's `waiting` signal that sends finds the wait parked.
        if (message.inbox !== undefined) {
          this.#inboxes.get(host)?.handle(message.inbox);
          // An agent parked on a quarantine thread lets a blamed agent waiting for one run there.
          if (host.dedicated && this.#quarantine.length > 0) this.#scheduleSoon();
        }
        for (const signal of message.signals) {
          // Sent once the turn's end is in the journal: a restart no longer runs that turn.
          if (signal.type === 'turn') this.#turnEnded(signal.agentId, signal.turn);
          this.#host.report(signal);
        }
        if (message.ended.length === 0) return;
        for (const { agentId, outcome } of message.ended) {
          const agent = this.#agents.get(agentId);
          if (!agent || agent.host !== host) continue;
          this.#release(agent);
          this.#host.ended(agentId, outcome);
        }
        this.#schedule();
        return;
      }
      case 'mcp_process':
        if (process.platform === 'win32') {
          this.#trackChild(host, message.pid, message.state);
          return;
        }
        // A stdio server leads its own process group: what it started goes with it. The group no
        // longer gets the terminal's Ctrl-C, so a process that ends at once still kills it.
        this.#trackChild(host, -message.pid, message.state);
        if (message.state === 'started') watchServerGroup(message.pid);
        else unwatchServerGroup(message.pid);
        return;
      case 'secrets':
        // Masked here too: results are written from this thread.
        this.#secrets.register(message.values);
        return;
      case 'command_process':
        this.#trackChild(host, -message.pgid, message.state);
        return;
      case 'host_error':
      case 'ready':
        return;
    }
  }

  /** Records a process (a pid) or process group (minus its id) a host started or saw end. */
  #trackChild(host: HostRecord, target: number, state: 'started' | 'exited'): void {
    let targets = this.#children.get(host);
    if (!targets) {
      targets = new Set();
      this.#children.set(host, targets);
    }
    if (state === 'started') targets.add(target);
    else targets.delete(target);
  }

  #onHostDied(host: HostRecord, cause: SerializedError): void {
    killOrphans(this.#children.get(host));
    this.#children.delete(host);
    const victims = [...host.agents].map((id) => this.#agents.get(id)).filter((a) => a !== undefined);
    host.agents.clear();
    this.#host.emit('thread:crashed', { hostId: host.id, cause, agents: victims.map((a) => a.spec.agentId) });
    const restarting: ThreadAgent[] = [];
    for (const agent of victims) {
      this.#release(agent);
      const answer = this.#host.lost(agent.spec.agentId, cause);
      if (answer === 'ended') continue;
      if (answer !== 'restart') {
        this.#endLost(host, answer);
        continue;
      }
      // Back in the engine's keeping at once: a cancel while the blame is read ends it here.
      agent.state = 'restarting';
      this.#agents.set(agent.spec.agentId, agent);
      restarting.push(agent);
    }
    if (restarting.length > 0) {
      // No one is charged for a thread that died before it was ready (it ran no code of the agents
      // placed on it meanwhile), nor for one terminated because an agent did not stop after its
      // cancel (stop()): that agent caused it, and has ended cancelled.
      const blame =
        !host.ready || cause.code === 'cancel_timeout' ? 'none' : victims.length === 1 ? 'alone' : 'evidence';
      void this.#restart(restarting, blame, cause);
    }
    // A quarantine thread is started again only when a quarantined agent needs one: a pass gives
    // one to those waiting for the thread that died. Its agent may have ended with it (cancelled,
    // or its result delivered) and restarts nothing, so without this pass they waited for ever.
    if (host.dedicated) this.#scheduleSoon();
    // One that died while starting is replaced (or not) by whoever started it.
    if (this.#host.closing() || !this.#pool || host.dedicated || !host.ready) return;
    this.#replaceHost(1);
  }

  /**
   * Starts a replacement for a dead thread. One that fails to start is tried again after the
   * restart backoff, up to REPLACEMENT_ATTEMPTS times; after that the engine runs on the threads it
   * has, and when it has none, what waits for one fails with the start's cause.
   */
  #replaceHost(attempt: number): void {
    const pool = this.#pool;
    if (!pool || this.#host.closing()) return;
    this.#replacing += 1;
    pool.startHost().then(
      (replacement) => {
        this.#replacing -= 1;
        this.#startFailure = undefined;
        this.#host.emit('thread:respawned', { hostId: replacement.id });
        this.#schedule();
      },
      (error: unknown) => {
        this.#replacing -= 1;
        if (this.#host.closing()) return;
        if (attempt < REPLACEMENT_ATTEMPTS) {
          const { baseDelayMs, maxDelayMs } = this.#options.restart;
          setTimeout(() => this.#replaceHost(attempt + 1), Math.min(maxDelayMs, baseDelayMs * 2 ** attempt));
          return;
        }
        this.#startFailure = serializeError(error);
        this.#schedule();
      },
    );
  }

  /**
   * Restarts the agents of a dead thread, charging the death to those that caused it: the only
   * agent on the thread (`alone`); else, when its stack shows a provider module's code held it, the
   * one agent of that provider between calls (none when several are: the culprit is not known);
   * else the ones whose journal shows a tool call running in it. With `none` (the thread died
   * before it was ready, or was terminated for another agent's cancel) no agent is charged.
   */
  async #restart(
    agents: readonly ThreadAgent[],
    blame: 'alone' | 'evidence' | 'none',
    cause: SerializedError,
  ): Promise<void> {
    const { maxRetries, baseDelayMs, maxDelayMs } = this.#options.restart;
    const alone = blame === 'alone';
    const pending =
      blame === 'none'
        ? []
        : await pendingWorkOf(
            agents.map((agent) => this.#journalFile(agent.spec.agentId)),
            this.#elsewhere,
          );
    const providers = blame === 'none' ? undefined : culpritProviders(cause, this.#options.providers);
    const suspects =
      providers === undefined
        ? undefined
        : agents.filter((agent, index) => {
            const work = pending[index];
            return providers.has(agent.spec.provider) && work?.running.length === 0 && !work.waiting;
          });
    agents.forEach((agent, index) => {
      const { agentId } = agent.spec;
      if (this.#agents.get(agentId) !== agent || agent.state !== 'restarting') return;
      const tools = suspects === undefined ? (pending[index]?.running ?? []) : [];
      const caught =
        suspects === undefined ? tools.length > 0 : suspects.length === 1 && suspects[0] === agent;
      const charged = alone || caught || agent.bystander >= this.#options.maxBystanderRestarts;
      if (charged) agent.charged += 1;
      else agent.bystander += 1;
      if (agent.charged > maxRetries) {
        this.#release(agent);
        const error = this.#ownCause(agent, tools, alone, caught && tools.length === 0, cause);
        this.#host.ended(agentId, this.#journalEnd(agentId, 'crashed', error));
        return;
      }
      if (charged) agent.quarantined = true;
      agent.spec = { ...agent.spec, resume: true };
      agent.state = 'queued';
      const restart = agent.charged + agent.bystander;
      this.#host.report({ type: 'restarted', agentId, restart, cause, charged });
      setTimeout(
        () => {
          if (this.#agents.get(agentId) !== agent || agent.state !== 'queued') return;
          (agent.quarantined ? this.#quarantine : this.#queue).unshift(agent);
          this.#schedule();
        },
        Math.min(maxDelayMs, baseDelayMs * 2 ** (restart - 1)),
      );
    });
    // An agent that failed here left its thread (a quarantine thread, retired when it died) to no
    // one: a pass gives the quarantined agents waiting for one a new thread. Without it they waited
    // for ever, since nothing else runs a pass once the last running agent has ended.
    this.#scheduleSoon();
  }

  /** The failure of an agent charged with more thread deaths than its restart cap allows. */
  #ownCause(
    agent: ThreadAgent,
    tools: readonly string[],
    alone: boolean,
    inProvider: boolean,
    cause: SerializedError,
  ): SerializedError {
    const where =
      tools.length > 0
        ? ` while it ran ${tools.map((tool) => `\`${tool}\``).join(', ')}`
        : inProvider
          ? " while its provider's code held it"
          : alone
            ? ' while it ran alone on it'
            : ` (after ${agent.bystander} restarts as a bystander)`;
    const cap = this.#options.restart.maxRetries;
    return {
      ...cause,
      message: `Its thread crashed ${agent.charged} times${where}; the restart cap (${cap}) was reached: ${cause.message}`,
      fields: { ...cause.fields, agentId: agent.spec.agentId, crashes: agent.charged, tools: [...tools] },
    };
  }

  #callbacks(): SupervisorCallbackApi {
    return {
      reportRateLimit: (key, askedMs) => {
        const retryAfterMs = Math.min(askedMs, MAX_PROVIDER_PAUSE_MS);
        const until = Date.now() + retryAfterMs;
        if (until <= (this.#pausedUntil.get(key) ?? 0)) return;
        this.#pausedUntil.set(key, until);
        if (this.#admission.keys.includes(key)) this.#admission.backoff(key, retryAfterMs);
        else this.#host.emit('provider:backoff', { provider: key, retryAfterMs });
        for (const host of this.#pool?.hosts ?? []) {
          this.#pool?.call(host, (api) => api.pauseProvider(key, until)).catch(() => {});
        }
      },
      completeTask: (agentId, result) => this.#host.completeTask(agentId, result),
      callHostTool: (agentId, name, args, callId, resume) =>
        this.#host.callHostTool(agentId, name, args, callId, resume),
      toolSpan: async (agentId, name, callId, at) => this.#host.toolSpan(agentId, name, callId, at),
    };
  }
}

/**
 * Kills the MCP servers (pids) and command process groups (negative ids) a dead thread left
 * behind: it can no longer close the servers' stdin nor kill the groups. Their leaders stay
 * zombies, as only the dead thread could have reaped them. On Windows a server's or a command's
 * whole process tree is ended (`taskkill /T /F`, not waited for): a signal would end only `cmd.exe`
 * of an `npx` or the `bash.exe` of a command, and Windows has no process groups to signal.
 * Exported for its test.
 */
export function killOrphans(targets: ReadonlySet<number> | undefined): void {
  for (const target of targets ?? []) {
    try {
      if (process.platform === 'win32') void killProcessTree(Math.abs(target), true);
      else process.kill(target, 'SIGKILL');
    } catch {
      // Already gone.
    }
    // No longer followed for the process's exit: once the group is gone its id may be given to
    // another process, which that exit's SIGKILL would then hit.
    if (target < 0) unwatchServerGroup(-target);
  }
}
