/**
 * Worker-thread entry: an actor host. One long-lived piscina task per thread runs many agent loops
 * (actors) and speaks src/protocol over five dedicated ports. The loop itself is the same code
 * that runs in-process; only its channels, tools and provider admission cross the port.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { threadId } from 'node:worker_threads';
import * as Comlink from 'comlink';
import { sleep } from '../src/abort.ts';
import { ForwardedSecrets } from '../src/engines/actor/forwarded-secrets.ts';
import {
  hostToolProxies,
  loadToolModules,
  ModuleLoader,
  providerFromConfig,
} from '../src/engines/actor/resources.ts';
import { runActor } from '../src/engines/actor/run-actor.ts';
import { SharedDefinitions } from '../src/engines/actor/shared-definitions.ts';
import { TurnCancels } from '../src/engines/actor/turn-cancels.ts';
import { serializeError } from '../src/errors.ts';
import { readJournal } from '../src/journal/reader.ts';
import { onSecretValues } from '../src/journal/redact.ts';
import { JournalWriter } from '../src/journal/writer.ts';
import { failedOutcome, unrunReason } from '../src/loop/outcome.ts';
import { failBeforeRun } from '../src/loop/run-agent.ts';
import type { AgentChannels, AgentOutcome } from '../src/loop/types.ts';
import { McpPool } from '../src/mcp/pool.ts';
import { extend } from '../src/objects.ts';
import type {
  ActorSpec,
  AgentEnded,
  AgentSignal,
  HostConfig,
  HostControlApi,
  HostEventMessage,
  HostStats,
  HostTask,
  OptionalSignal,
  Port,
  ProviderConfig,
} from '../src/protocol/messages.ts';
import type { Admission, Provider } from '../src/providers/types.ts';
import { createToolRegistry } from '../src/tools/builtin/index.ts';
import { onCommandProcess } from '../src/tools/builtin/run-terminal-cmd.ts';
import type { ToolRegistry } from '../src/tools/registry.ts';
import { AdmissionClient } from './admission-client.ts';
import { CallbackClient } from './callback-client.ts';
import { InboxClient } from './inbox-client.ts';

/**
 * Signals sent only when the supervisor listens for them. Without listeners they were most of the
 * events port's traffic and ~60 % of the main thread's time in a fan-out profile (cloning them,
 * building events nobody received, and the garbage of both).
 */
const OPTIONAL_SIGNALS: ReadonlySet<string> = new Set<OptionalSignal>([
  'round',
  'tool_call',
  'receipt',
  'text',
]);

/** Agents a host starts per event-loop turn (see #pumpStarts). */
const START_BATCH = 32;

interface Actor {
  readonly controller: AbortController;
  /** A session's turn cancels (sessions only). */
  readonly turns?: TurnCancels;
}

class ActorHost {
  readonly #config: HostConfig;
  readonly #supervisor: CallbackClient;
  readonly #events: Port;
  readonly #slots: AdmissionClient;
  readonly #inbox: InboxClient;
  readonly #actors = new Map<string, Actor>();
  readonly #providers = new Map<string, Promise<Provider>>();
  readonly #pausedUntil = new Map<string, number>();
  /**
   * Rate-limit reports on their way to the supervisor, by provider key. The report goes over the
   * callback port and a slot's release over the admission port, which may be read first: a slot is
   * given back only once the report has arrived, or the freed slot could start another agent's
   * request before the key is paused.
   */
  readonly #reports = new Map<string, Promise<void>>();
  readonly #promptCache = new Map<string, Promise<string>>();
  /** One object per distinct definition, so per-definition work is done once, not per agent. */
  readonly #definitions = new SharedDefinitions();
  readonly #modules = new ModuleLoader();
  #registry: Promise<ToolRegistry> | undefined;
  /** This thread's MCP connections, shared by its agents (see src/mcp/pool.ts). */
  #mcp: McpPool | undefined;
  /** Stops reporting this thread's command process groups to the engine. */
  readonly #unwatchCommands: () => void;
  readonly #unwatchSecrets: () => void;
  /** Values the supervisor's thread registered (it sent them): masked here, never posted back. */
  readonly #supervisorSecrets: Set<string>;
  readonly #secrets = new ForwardedSecrets();
  readonly #signals: AgentSignal[] = [];
  /** Optional signals the supervisor listens for; the others are not built or sent. */
  #wanted: ReadonlySet<string>;
  readonly #wants = (kind: OptionalSignal): boolean => this.#wanted.has(kind);
  readonly #ended: AgentEnded[] = [];
  /** Agents waiting for their start (see #pumpStarts). */
  readonly #startQueue: ActorSpec[] = [];
  /** One for every agent of the host (a closure each would stay alive as long as the agent). */
  readonly #onSignal = (agentSignal: AgentSignal): void => this.#signal(agentSignal);
  readonly #requestApproval: NonNullable<AgentChannels['requestApproval']> = (request, signal) =>
    this.#inbox.decision(request, signal);
  #pumping = false;
  #flushScheduled = false;
  #shuttingDown = false;
  #resolveIdle: (() => void) | undefined;

  constructor(
    config: HostConfig,
    supervisor: CallbackClient,
    events: Port,
    slots: AdmissionClient,
    inbox: InboxClient,
  ) {
    this.#config = config;
    this.#supervisor = supervisor;
    this.#events = events;
    this.#slots = slots;
    this.#inbox = inbox;
    this.#wanted = new Set<string>(config.wantedSignals);
    this.#unwatchCommands = onCommandProcess((pgid, state) =>
      this.#post({ type: 'command_process', pgid, state }),
    );
    // Posted at once, on the port outcomes take later: the supervisor knows them before it
    // writes a result that repeats them.
    // The program's own registrations (in the supervisor's thread) are masked here too: journals
    // and reports are written in this thread.
    this.#supervisorSecrets = new Set(config.secretValues);
    this.#secrets.register(config.secretValues);
    this.#unwatchSecrets = onSecretValues((values) => {
      const own = values.filter((value) => !this.#supervisorSecrets.has(value));
      if (own.length > 0) this.#post({ type: 'secrets', values: own });
    });
    mkdirSync(config.journalDir, { recursive: true });
  }

  /** Resolves when shutdown was asked for and every actor has ended. */
  finished(): Promise<void> {
    return new Promise((resolve) => {
      this.#resolveIdle = resolve;
    });
  }

  control(): HostControlApi {
    return {
      spawnMany: (specs) => {
        for (const spec of specs) this.#spawn(spec);
      },
      cancel: (agentId, reason) => this.#actors.get(agentId)?.controller.abort(new Error(reason)),
      cancelTurn: (agentId, turn, reason) => this.#actors.get(agentId)?.turns?.cancel(turn, reason),
      pauseProvider: (key, until) => {
        if (until > (this.#pausedUntil.get(key) ?? 0)) this.#pausedUntil.set(key, until);
      },
      heartbeat: () => this.#stats(),
      measure: () => {
        collectGarbage();
        return this.#stats();
      },
      wantSignals: (kinds) => {
        this.#wanted = new Set<string>(kinds);
      },
      learnSecrets: (values) => {
        for (const value of values) this.#supervisorSecrets.add(value);
        this.#secrets.register(values);
      },
      shutdown: (reason) => {
        this.#shuttingDown = true;
        for (const actor of this.#actors.values()) actor.controller.abort(new Error(reason));
        this.#checkIdle();
      },
    };
  }

  #stats(): HostStats {
    const memory = process.memoryUsage();
    return {
      hostId: this.#config.hostId,
      agents: this.#actors.size,
      heapUsed: memory.heapUsed,
      external: memory.external,
    };
  }

  #post(message: HostEventMessage): void {
    this.#events.postMessage(message);
  }

  #signal(signal: AgentSignal): void {
    if (OPTIONAL_SIGNALS.has(signal.type) && !this.#wanted.has(signal.type)) return;
    this.#signals.push(signal);
    this.scheduleFlush();
  }

  /**
   * One message per event-loop turn for every signal, end and instruction wait of the turn,
   * instead of one each (the inbox client calls this when it queues a wait or an abandon).
   */
  scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    const signals = this.#signals;
    const ended = this.#ended;
    const inbox = this.#inbox.take();
    if (signals.length === 0 && ended.length === 0 && inbox === undefined) return;
    // The same two arrays every time (postMessage copies them at once): a fresh `[]` starts out
    // holding small integers only, and #end's optimized push deopted on the first outcome.
    try {
      // The supervisor hears of an event only once it is in the agent's journal.
      JournalWriter.commitAll();
      // The waits ride along: the supervisor parks them before it reads the signals.
      this.#post(
        inbox === undefined ? { type: 'batch', signals, ended } : { type: 'batch', signals, ended, inbox },
      );
    } finally {
      signals.length = 0;
      ended.length = 0;
    }
  }

  #spawn(spec: ActorSpec): void {
    this.#actors.set(
      spec.agentId,
      spec.session === true
        ? { controller: new AbortController(), turns: new TurnCancels() }
        : { controller: new AbortController() },
    );
    this.#startQueue.push(spec);
    this.#pumpStarts();
  }

  #launch(spec: ActorSpec): void {
    const actor = this.#actors.get(spec.agentId);
    if (actor === undefined) return;
    let running: Promise<AgentOutcome>;
    try {
      running = this.#run(spec, actor.controller.signal);
    } catch (error) {
      running = Promise.reject(error);
    }
    // The handlers close over the id only: the spec would otherwise live as long as the agent.
    const { agentId } = spec;
    running.then(
      (outcome) => this.#end(agentId, outcome),
      (error: unknown) => {
        const cause = serializeError(error);
        this.#end(agentId, failedOutcome(agentId, unrunReason(cause), cause));
      },
    );
  }

  /**
   * Starts queued agents a batch per event-loop turn. Thousands of spawns at once would otherwise
   * run their synchronous start-up back to back and keep heartbeats (and cancels) out for seconds.
   */
  #pumpStarts(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    setImmediate(() => {
      this.#pumping = false;
      for (const spec of this.#startQueue.splice(0, START_BATCH)) this.#launch(spec);
      if (this.#startQueue.length > 0) this.#pumpStarts();
    });
  }

  #end(agentId: string, outcome: AgentOutcome): void {
    this.#actors.delete(agentId);
    // In the batch after the agent's last signals, so the supervisor sees its last round first.
    this.#ended.push({ agentId, outcome });
    this.scheduleFlush();
    this.#checkIdle();
  }

  #checkIdle(): void {
    if (!this.#shuttingDown || this.#actors.size > 0) return;
    // The ports close once the host is idle: what is batched goes now.
    this.#flush();
    this.#resolveIdle?.();
  }

  #run(spec: ActorSpec, signal: AbortSignal): Promise<AgentOutcome> {
    const journalPath = path.join(this.#config.journalDir, `${spec.agentId}.jsonl`);
    // Batched: the loop commits before each side effect, the host before each report (src/journal/writer.ts).
    // Precreated: the engine creates new agents' files on the main thread (journal-precreator.ts).
    const journal = JournalWriter.open(journalPath, {
      fsync: this.#config.fsync,
      batch: true,
      precreated: !spec.resume,
    });
    return this.#start(spec, signal, journal, journalPath).finally(() => journal.close());
  }

  /**
   * Starts the agent's loop and returns its promise without awaiting it: this frame ends at once
   * instead of staying suspended (with everything it holds) for as long as the agent runs.
   */
  async #start(
    spec: ActorSpec,
    signal: AbortSignal,
    journal: JournalWriter,
    journalPath: string,
  ): Promise<AgentOutcome> {
    const resumeFrom =
      spec.resume && journal.existingEvents > 0 ? readJournal(journalPath).events : undefined;
    const shared = extend(spec, { definition: this.#definitions.of(spec.definition) });
    let provider: Provider;
    try {
      provider = await this.#provider(spec.provider);
    } catch (error) {
      // A bad provider option or module: this agent's request cannot run, and says so in its journal.
      return failBeforeRun({ agentId: spec.agentId, journal }, error);
    }
    return runActor(shared, {
      provider,
      registry: await this.#tools(),
      cwd: this.#config.cwd,
      mcp: this.#mcpPool(),
      journal,
      ...(resumeFrom ? { resumeFrom, truncatedBytes: journal.truncatedBytes } : {}),
      signal,
      channels: this.#channels(spec.agentId, this.#actors.get(spec.agentId)?.turns),
      onSignal: this.#onSignal,
      wantsSignal: this.#wants,
      toolSpan: (name, callId, at) =>
        // A host tool runs on the supervisor, under its span already.
        this.#config.hostTools.some((tool) => tool.name === name)
          ? Promise.resolve(undefined)
          : this.#supervisor.toolSpan(spec.agentId, name, callId, at),
      promptCache: this.#promptCache,
    });
  }

  #mcpPool(): McpPool {
    this.#mcp ??= new McpPool({
      cwd: this.#config.cwd,
      onProcess: (pid, state) => this.#post({ type: 'mcp_process', pid, state }),
    });
    return this.#mcp;
  }

  /** Stops this thread's MCP servers and the reports of its commands. */
  closeChildren(): Promise<void> {
    this.#unwatchCommands();
    this.#unwatchSecrets();
    return this.#mcp?.close() ?? Promise.resolve();
  }

  #channels(agentId: string, turns: TurnCancels | undefined): AgentChannels {
    const channels: AgentChannels = {
      completeTask: (result) => this.#supervisor.completeTask(agentId, result),
      waitForInstruction: (index, timeoutMs, signal) => this.#inbox.wait(agentId, index, timeoutMs, signal),
      requestApproval: this.#requestApproval,
      hostToolOutcome: (name, callId) =>
        this.#config.hostTools.some((tool) => tool.name === name)
          ? this.#supervisor.callHostTool(agentId, name, {}, callId, true)
          : undefined,
    };
    return turns === undefined ? channels : { ...channels, turnSignal: (turn) => turns.signal(turn) };
  }

  #provider(name: string): Promise<Provider> {
    let provider = this.#providers.get(name);
    if (!provider) {
      const config = this.#config.providers[name];
      if (!config) return Promise.reject(new Error(`No provider named ${name}`));
      provider = this.#createProvider(name, config);
      this.#providers.set(name, provider);
    }
    return provider;
  }

  #createProvider(key: string, config: ProviderConfig): Promise<Provider> {
    const hooks = {
      admission: this.#admission(key),
      onRateLimited: (retryAfterMs: number | undefined) => {
        if (retryAfterMs === undefined || retryAfterMs <= 0) return;
        const report = this.#supervisor.reportRateLimit(key, retryAfterMs).then(
          () => {},
          () => {},
        );
        this.#reports.set(key, report);
        void report.then(() => {
          if (this.#reports.get(key) === report) this.#reports.delete(key);
        });
      },
    };
    return providerFromConfig(config, hooks, this.#modules);
  }

  #admission(key: string): Admission {
    const limited = this.#slots.limits(key);
    return {
      acquire: async (ticket, signal) => {
        const wait = (this.#pausedUntil.get(key) ?? 0) - Date.now();
        if (wait > 0) await sleep(wait, signal);
        if (!limited) return () => {};
        const grantId = await this.#slots.acquire(key, 0, ticket.estimatedInputTokens, signal);
        return () => {
          const report = this.#reports.get(key);
          if (report === undefined) this.#slots.release(grantId);
          else void report.then(() => this.#slots.release(grantId));
        };
      },
    };
  }

  #tools(): Promise<ToolRegistry> {
    this.#registry ??= this.#loadTools();
    return this.#registry;
  }

  async #loadTools(): Promise<ToolRegistry> {
    return createToolRegistry([
      ...(await loadToolModules(this.#config.toolModules, this.#modules)),
      ...hostToolProxies(this.#config.hostTools, (agentId, name, args, _signal, callId) =>
        this.#supervisor.callHostTool(agentId, name, args, callId),
      ),
    ]);
  }
}

/**
 * A full GC inside this thread. `--expose-gc` cannot be passed to a worker, so the flag is set at
 * run time and the function taken from a fresh context (Node's documented way to get `gc`).
 */
function collectGarbage(): void {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

/** The piscina task: host agents until the supervisor shuts this host down. */
export default async function actorHost(task: HostTask): Promise<void> {
  let carrier: ActorHost | undefined;
  const host = new ActorHost(
    task.config,
    new CallbackClient(task.callback),
    task.events,
    new AdmissionClient(task.admission, task.config.admissionKeys),
    // Instruction waits go up in the host's events batch (one post per turn for both).
    new InboxClient(task.inbox, () => carrier?.scheduleFlush()),
  );
  carrier = host;
  const finished = host.finished();
  Comlink.expose(host.control(), task.control as unknown as Comlink.Endpoint);
  task.events.postMessage({ type: 'ready', hostId: task.config.hostId, threadId } satisfies HostEventMessage);
  await finished;
  await host.closeChildren();
  task.control.close();
  task.callback.close();
  task.events.close();
  task.admission.close();
  task.inbox.close();
}
