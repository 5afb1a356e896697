/**
 * The supervisor of the redis backend: the same public API as the thread backend's Supervisor, with
 * agents run as BullMQ jobs by worker processes on any machine (`troupe worker`). Each agent is one
 * job whose id is the agent id; its journal and instruction inbox are Redis Streams; its outcome is
 * the job's return value, read from job state (worker signals only say when to look).
 */
import { randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';
import { EventEmitter } from 'eventemitter3';
import type { Redis } from 'ioredis';
import type { AgentDefinition } from '../definition/types.ts';
import { type SerializedError, SystemError, serializeError, UserError } from '../errors.ts';
import type { AuditEvent } from '../journal/events.ts';
import type { AgentOutcome, FailureReason } from '../loop/types.ts';
import type { McpServers } from '../mcp/config.ts';
import type { HostToolDeclaration } from '../protocol/messages.ts';
import type { Usage } from '../providers/types.ts';
import { AgentHandle } from '../supervisor/agent-handle.ts';
import { loadDefinitions, runMcpServers } from '../supervisor/definitions.ts';
import { FanOut, type FanOutOptions, type SpawnSpec } from '../supervisor/fanout.ts';
import { ORCHESTRATION_TOOLS } from '../supervisor/orchestration.ts';
import type { SpawnOptions } from '../supervisor/supervisor.ts';
import { rollUpUsage } from '../supervisor/usage-tree.ts';
import { bullConnection, closeRedis, connectRedis, waitForRedis } from './connection.ts';
import { AGENT_JOB_NAME, CANCEL_FLAG_TTL_MS } from './constants.ts';
import { dispatchSignal, type RedisSupervisorEvents } from './events.ts';
import { answerHostCall, type HostCall } from './host-calls.ts';
import { Inbox } from './inbox.ts';
import { type AgentJobData, prepareJobData } from './job-data.ts';
import { checkAgentId, ScaleoutKeys } from './keys.ts';
import {
  type PreparedRedisSupervisorOptions,
  prepareRedisSupervisorOptions,
  type RedisSupervisorOptions,
} from './options.ts';
import { bullmq } from './packages.ts';
import { promote } from './promote.ts';
import {
  abortReason,
  cancelledError,
  hasEnded,
  isOutcome,
  type RemoteAgent,
  runHostTool,
  ZERO_USAGE,
} from './remote-agent.ts';
import { readRedisJournal } from './stream-journal.ts';
import { readSupervisorStreams } from './supervisor-streams.ts';

const RECONCILE_BATCH = 500;

interface Connections {
  readonly redis: Redis;
  readonly reader: Redis;
  readonly queue: Queue<AgentJobData, AgentOutcome>;
  /** bullmq's Job class (the module is loaded on connect). */
  readonly jobs: typeof Job;
  readonly inbox: Inbox;
}

/** Runs agents as BullMQ jobs on worker processes. Same API and events as {@link Supervisor}. */
export class RedisSupervisor extends EventEmitter<RedisSupervisorEvents> {
  /** Identifies this supervisor's signal and request streams. */
  readonly id = randomUUID();
  readonly #options: PreparedRedisSupervisorOptions;
  readonly #keys: ScaleoutKeys;
  readonly #agents = new Map<string, RemoteAgent>();
  #connections: Connections | undefined;
  #definitions: Map<string, AgentDefinition> | undefined;
  #mcpServers: McpServers = {};
  #hostTools: HostToolDeclaration[] = [];
  #starting: Promise<void> | undefined;
  #reading: Promise<void> | undefined;
  #reconcileTimer: NodeJS.Timeout | undefined;
  #reconciling = false;
  #stopped = false;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: RedisSupervisorOptions = {}) {
    super();
    this.#options = prepareRedisSupervisorOptions(options);
    this.#keys = new ScaleoutKeys(this.#options.prefix, this.#options.queueName);
  }

  /** The validated options. */
  get options(): PreparedRedisSupervisorOptions {
    return this.#options;
  }

  /** Agents known to the supervisor (queued, running or ended, until close()). */
  get agentCount(): number {
    return this.#agents.size;
  }

  /** Loads definitions and connects to Redis. Called by the first spawn; call it to start early. */
  start(): Promise<void> {
    this.#starting ??= this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    this.#definitions = await loadDefinitions(this.#options);
    this.#mcpServers = await runMcpServers(this.#options);
    this.#hostTools = [
      ...Object.entries(this.#options.hostTools).map(([name, tool]) => ({
        name,
        description: tool.description,
        parameters: tool.parameters,
        readOnly: tool.readOnly ?? false,
      })),
      ...ORCHESTRATION_TOOLS,
    ];
    const url = this.#options.redisUrl;
    const redis = connectRedis(url, 'troupe-supervisor');
    // Without a listener, a connection error event would crash the process; the client reconnects.
    redis.on('error', () => {});
    try {
      await waitForRedis(redis, url, this.#options.connectTimeoutMs);
    } catch (error) {
      redis.disconnect();
      throw error;
    }
    const reader = redis.duplicate({ enableAutoPipelining: false });
    reader.on('error', () => {});
    const { Job: jobs, Queue } = bullmq();
    const queue = new Queue<AgentJobData, AgentOutcome>(this.#keys.queue, {
      connection: bullConnection(url),
      prefix: this.#keys.prefix,
    });
    queue.on('error', () => {});
    this.#connections = { redis, reader, queue, jobs, inbox: new Inbox(redis, this.#keys) };
    await queue.waitUntilReady();
    this.#reading = readSupervisorStreams({
      reader,
      signals: this.#keys.signals(this.id),
      requests: this.#keys.requests(this.id),
      stopped: () => this.#stopped,
      onSignal: (signal) => dispatchSignal(this.#signalTarget, signal),
      onCall: (call) => void this.#answer(call),
    });
    this.#reconcileTimer = setInterval(() => void this.#reconcile(), this.#options.reconcileIntervalMs);
    this.#reconcileTimer.unref();
  }

  /**
   * Spawns an agent by definition name (or a definition object) and returns its handle at once.
   * The agent's job is queued until a worker takes it. A spawn that cannot run (unknown agent,
   * closed supervisor) settles `result` as Failed with reason `invalid_request`. Spawning an id
   * that already has a job attaches to that job instead of starting another.
   */
  spawn(agent: string | AgentDefinition, options: SpawnOptions): AgentHandle {
    const id = options.id ?? randomUUID();
    checkAgentId(id);
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
    const record: RemoteAgent = {
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
        resume: false,
      },
      handle,
      settle,
      children: [],
      state: 'queued',
      cancelReason: undefined,
      cancelTimer: undefined,
      treeUsage: ZERO_USAGE,
      treeCostUsd: 0,
      sends: Promise.resolve(),
      collecting: false,
      heardAt: 0,
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
    this.start()
      .then(() => this.#enqueue(record, typeof agent === 'string' ? agent : undefined))
      .catch((error: unknown) => this.#fail(record, 'crashed', serializeError(error)));
    return handle;
  }

  /** Runs many agents; iterate it for results as they finish, or await `all()` for them in order. */
  fanOut(specs: Iterable<SpawnSpec>, options: FanOutOptions = {}): FanOut {
    return new FanOut(this, [...specs], options);
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

  /** Threads belong to the worker processes: there is nothing to measure here. */
  async measureThreads(): Promise<{ heapUsed: number; external: number; agents: number }[]> {
    return [];
  }

  /**
   * Sends an instruction and resolves with its index once it is stored in the agent's inbox
   * (`handle.send` does the same without waiting). A parked agent is woken.
   */
  instruct(agentId: string, text: string): Promise<number> {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended') {
      return Promise.reject(
        new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId }),
      );
    }
    const delivered = record.sends.then(() => this.#deliver(agentId, text));
    record.sends = delivered.catch(() => {});
    return delivered;
  }

  /** The agent's journal as stored in Redis (any agent of this queue, not only this supervisor's). */
  async journal(agentId: string): Promise<AuditEvent[]> {
    checkAgentId(agentId);
    await this.start();
    return readRedisJournal(this.#connected().redis, this.#keys.journal(agentId));
  }

  /** Cancels every agent (they end Failed(cancelled)) and disconnects. No job is left running. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const open = [...this.#agents.values()].filter((r) => r.state !== 'ended');
    for (const record of open) this.#cancel(record.id, 'supervisor closed');
    await Promise.all(open.map((r) => r.handle.result));
    if (!this.#starting) return;
    await this.#starting.catch(() => {});
    const connections = this.#connections;
    if (!connections) return;
    this.#stopped = true;
    if (this.#reconcileTimer) clearInterval(this.#reconcileTimer);
    connections.reader.disconnect();
    await this.#reading;
    await Promise.all([...this.#agents.values()].map((r) => r.sends));
    await connections.redis.del(this.#keys.signals(this.id), this.#keys.requests(this.id)).catch(() => 0);
    await connections.queue.close();
    await closeRedis(connections.redis);
  }

  #connected(): Connections {
    const connections = this.#connections;
    if (!connections) throw new SystemError('not_started', 'The supervisor is not connected to Redis yet');
    return connections;
  }

  async #enqueue(record: RemoteAgent, name: string | undefined): Promise<void> {
    if (record.state !== 'queued') return;
    const prepared = prepareJobData(record.spec, name, {
      definitions: this.#definitions ?? new Map(),
      options: this.#options,
      hostTools: this.#hostTools,
      supervisorId: this.id,
      modelOf: (id) => this.#agents.get(id)?.spec.model,
      mcpServers: this.#mcpServers,
    });
    if ('error' in prepared) {
      this.#fail(record, 'invalid_request', prepared.error);
      return;
    }
    const data = prepared.data;
    const retain = this.#options.retainSeconds;
    await this.#connected().queue.add(AGENT_JOB_NAME, data, {
      jobId: record.id,
      // Retries cover failures of the run itself (lost journal writes), not the agent's own failures.
      attempts: this.#options.restart.maxRetries + 1,
      backoff: { type: 'exponential', delay: this.#options.restart.baseDelayMs },
      removeOnComplete: retain === undefined ? false : { age: retain },
      removeOnFail: retain === undefined ? false : { age: retain },
    });
    if (hasEnded(record)) {
      // Cancelled while the job was being added: make sure the job ends too.
      await this.#cancelRemote(record.id, record.cancelReason ?? 'cancelled');
      return;
    }
    record.heardAt = Date.now();
    record.state = 'running';
  }

  readonly #signalTarget = {
    emit: <K extends keyof RedisSupervisorEvents>(name: K, ...args: RedisSupervisorEvents[K]): boolean =>
      (this.emit as (name: K, ...args: RedisSupervisorEvents[K]) => boolean)(name, ...args),
    agent: (agentId: string) => {
      const record = this.#agents.get(agentId);
      if (!record || record.state === 'ended') return undefined;
      record.heardAt = Date.now();
      return { handle: record.handle, parentId: record.spec.parentId };
    },
    ended: (agentId: string) => {
      const record = this.#agents.get(agentId);
      if (record) void this.#collect(record);
    },
  };

  async #answer(call: HostCall): Promise<void> {
    const outcome = await runHostTool(
      {
        options: this.#options,
        agents: this.#agents,
        spawn: (agent, options) => this.spawn(agent, options),
      },
      call,
    );
    await answerHostCall(this.#connected().redis, this.#keys, call.requestId, outcome).catch(() => {
      // The worker waiting for it is gone or Redis is: the resumed agent records the call as interrupted.
    });
  }

  /** Reads the job of `record` and settles the agent if the job has finished. */
  async #collect(record: RemoteAgent): Promise<void> {
    if (record.state !== 'running' || record.collecting) return;
    record.collecting = true;
    try {
      const { jobs, queue } = this.#connected();
      const job = await jobs.fromId<AgentJobData, AgentOutcome>(queue, record.id);
      if (!job) {
        const error = new SystemError('job_lost', `The job of agent ${record.id} is gone from Redis`, {
          agentId: record.id,
        });
        this.#fail(record, 'crashed', error.toJSON());
        return;
      }
      if (!job.finishedOn) return;
      const value: unknown = job.returnvalue;
      if (isOutcome(value, record.id)) {
        this.#finish(record, value);
      } else {
        const error = new SystemError(
          'job_failed',
          `The job of agent ${record.id} failed: ${job.failedReason}`,
          {
            agentId: record.id,
            attempts: job.attemptsMade,
          },
        );
        this.#fail(record, 'crashed', error.toJSON());
      }
    } catch {
      // Redis is unreachable: the next reconcile tries again.
    } finally {
      record.collecting = false;
    }
  }

  /**
   * Looks at the job state of running agents no worker has mentioned for a while, in case an end
   * signal was lost (signals are best effort; job state is not).
   */
  async #reconcile(): Promise<void> {
    if (this.#reconciling || this.#stopped) return;
    this.#reconciling = true;
    try {
      const quietSince = Date.now() - this.#options.reconcileIntervalMs;
      const running = [...this.#agents.values()].filter(
        (r) => r.state === 'running' && r.heardAt <= quietSince,
      );
      for (let start = 0; start < running.length; start += RECONCILE_BATCH) {
        const batch = running.slice(start, start + RECONCILE_BATCH);
        const pipeline = this.#connected().redis.pipeline();
        for (const record of batch) pipeline.hmget(this.#keys.job(record.id), 'finishedOn', 'timestamp');
        const replies = (await pipeline.exec()) ?? [];
        batch.forEach((record, index) => {
          const fields = replies[index]?.[1] as (string | null)[] | undefined;
          if (fields && (fields[0] !== null || fields[1] === null)) void this.#collect(record);
        });
      }
    } catch {
      // Redis is unreachable: try again at the next tick.
    } finally {
      this.#reconciling = false;
    }
  }

  #send(agentId: string, text: string): void {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended') {
      throw new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId });
    }
    this.instruct(agentId, text).catch(() => {
      // Commands wait through a Redis outage; only a closed connection ends up here, at close().
    });
  }

  async #deliver(agentId: string, text: string): Promise<number> {
    await this.start();
    const { inbox, queue, jobs } = this.#connected();
    const sent = await inbox.send(agentId, text);
    if (sent.parked) {
      const job = await jobs.fromId(queue, agentId);
      if (job) await promote(job);
    }
    return sent.index;
  }

  #cancel(agentId: string, reason: string): void {
    const record = this.#agents.get(agentId);
    if (!record || record.state === 'ended' || record.cancelReason !== undefined) return;
    record.cancelReason = reason;
    for (const child of record.children) this.#cancel(child, `parent cancelled: ${reason}`);
    if (record.state === 'queued') {
      this.#fail(record, 'cancelled', cancelledError(reason));
      return;
    }
    this.#cancelRemote(agentId, reason).catch(() => {
      // Redis is unreachable: the grace timer settles the agent.
    });
    record.cancelTimer = setTimeout(() => void this.#abandon(record, reason), this.#options.graceMs);
    record.cancelTimer.unref();
  }

  /** Sets the cancel flag, nudges the worker running the agent and wakes a parked job. */
  async #cancelRemote(agentId: string, reason: string): Promise<void> {
    const { redis, queue, jobs } = this.#connected();
    await redis.set(this.#keys.cancel(agentId), reason, 'PX', CANCEL_FLAG_TTL_MS);
    await redis.publish(this.#keys.cancelChannel, agentId);
    if ((await redis.exists(this.#keys.parked(agentId))) > 0) {
      const job = await jobs.fromId(queue, agentId);
      if (job) await promote(job);
    }
  }

  /**
   * No worker ended the cancelled agent within `graceMs` (no worker is running, or the agent's
   * worker is unresponsive): remove its job if no worker holds it, and settle the agent. The
   * cancel flag stays, so a worker that takes the job later ends it at once.
   */
  async #abandon(record: RemoteAgent, reason: string): Promise<void> {
    if (record.state === 'ended') return;
    await this.#connected()
      .queue.remove(record.id)
      .catch(() => 0);
    this.#fail(record, 'cancelled', cancelledError(reason));
  }

  #fail(record: RemoteAgent, reason: FailureReason, error: SerializedError): void {
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

  #finish(record: RemoteAgent, outcome: AgentOutcome): void {
    if (record.state === 'ended') return;
    record.state = 'ended';
    if (record.cancelTimer) clearTimeout(record.cancelTimer);
    record.removeAbortListener();
    rollUpUsage(this.#agents, record, outcome.usage, outcome.costUsd);
    const event = { agentId: record.id, parentId: record.spec.parentId, agent: record.handle.agent, outcome };
    this.emit(outcome.status === 'completed' ? 'agent:completed' : 'agent:failed', event);
    record.handle.emit('ended', event);
    record.settle(outcome);
  }
}
