/**
 * The redis engine: agents run as BullMQ jobs taken by worker processes on any machine
 * (`troupe worker`). The agents run in one event-loop turn go out as one batch job per
 * `maxBatchSize` (batch-job.ts); a lone agent, and an agent a batch handed off (it parked, or its
 * run failed), is a job of its own whose id is the agent id. Journals and instruction inboxes are
 * Redis Streams; an outcome is in its batch's hash, or the return value of the agent's own job,
 * read from Redis (worker signals only say when to look). A worker that dies loses its job locks and another worker
 * resumes its agents from their journals: restarts happen on the workers, and the engine reports
 * them when the resumed run starts.
 */
import { randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { SystemError, serializeError } from '../../errors.ts';
import type { AuditEvent } from '../../journal/events.ts';
import { forkedInputs, forkedTotals, writeFork } from '../../journal/fork.ts';
import type { UsageTotals } from '../../journal/usage.ts';
import { cancelledError, failedOutcome } from '../../loop/outcome.ts';
import type { AgentOutcome, InheritedSpend } from '../../loop/types.ts';
import type { ApprovalDecision } from '../../protocol/approvals.ts';
import type { ActorSpec, AgentMessage, HostStats, OptionalSignal } from '../../protocol/messages.ts';
import type {
  AgentJobData,
  BatchJobData,
  BatchResult,
  SignalFailure,
  SupervisorRequest,
  WorkerSignal,
} from '../../protocol/redis.ts';
import { credentialsIn } from '../../providers/credentials.ts';
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
import { RedisApprovals } from './approvals.ts';
import { markBatchRead } from './batch-hash.ts';
import { RedisChildIndex } from './child-index.ts';
import { bullQueueOptions, closeRedis, connectRedis, displayUrl, waitForRedis } from './connection.ts';
import {
  AGENT_JOB_NAME,
  BATCH_JOB_NAME,
  CANCEL_FLAG_TTL_MS,
  CLOSE_BATCH_REMOVAL_MS,
  CLOSE_BATCH_REMOVAL_POLL_MS,
  EVENTS_STREAM_MAX_LENGTH,
  HANDED_OFF,
  MAX_OUTCOME_BYTES,
  MAX_STREAM_ENTRY_BYTES,
  UNREAD_JOB_TTL_MS,
} from './constants.ts';
import { answerHostCall, answerToolSpan } from './host-calls.ts';
import { Inbox } from './inbox.ts';
import { batchJobData, jobData } from './job-data.ts';
import { journalOutcome } from './journal-end.ts';
import { renameJournal } from './journal-registry.ts';
import { checkAgentId, ScaleoutKeys } from './keys.ts';
import type { PreparedRedisOptions } from './options.ts';
import { bullmq } from './packages.ts';
import { connectedWorkers } from './presence.ts';
import { promote } from './promote.ts';
import { batchHashTtlMs, batchJobRemoval, jobRemoval } from './retention.ts';
import { countEndedAgent } from './run-budget.ts';
import { LuaScript } from './script.ts';
import { SecretKeyPair, type SecretsRefusal } from './secret-box.ts';
import { registerReceived } from './secret-forwarder.ts';
import { readSignalFailure } from './signals.ts';
import { RedisJournal, readRedisJournal } from './stream-journal.ts';
import { type RefusedEntry, readSupervisorStreams } from './supervisor-streams.ts';
import { sendTurnCancel } from './turn-cancel.ts';

const RECONCILE_BATCH = 500;
/**
 * A quiet agent's job state is read `reconcileIntervalMs` after a worker last said something about
 * it, then after twice as long each time it is still running, up to this many intervals apart.
 */
const RECONCILE_MAX_INTERVALS = 10;

/**
 * Reconcile ticks over which a supervisor tries to remove a batch job a worker still holds once it
 * has read all its agents (`retainSeconds: 0`); past them the worker removes both as the batch ends
 * (BATCH_READ), or, when it never ends, they expire UNREAD_JOB_TTL_MS after the batch failed.
 */
const BATCH_REMOVAL_TRIES = 10;

/** Options of the redis engine. */
export type RedisEngineOptions = EngineOptions & { readonly redis: PreparedRedisOptions };

interface Connections {
  readonly redis: Redis;
  readonly reader: Redis;
  readonly queue: Queue<AgentJobData | BatchJobData, AgentOutcome | null>;
  /** bullmq's Job class (the module is loaded on connect). */
  readonly jobs: typeof Job;
  readonly inbox: Inbox;
  readonly approvals: RedisApprovals;
}

/** The engine's state of one agent it holds. */
interface RemoteAgent {
  /** adding: its job is being added; running: a job exists. */
  state: 'adding' | 'running';
  /** Set when it was cancelled while its job was being added. */
  cancelled: string | undefined;
  /** Instructions go out one after another, in the order they were sent. */
  sends: Promise<unknown>;
  collecting: boolean;
  /** When a worker last said something about the agent (or its job was added). */
  heardAt: number;
  /** When the reconcile reads its job state next, unless a worker says something first. */
  checkAt: number;
  /** Quiet time before the read after `checkAt`: doubles while the job runs (see RECONCILE_MAX_INTERVALS). */
  backoffMs: number;
  /** A worker took its job at least once. */
  started: boolean;
  /** The batch job it runs in; undefined once it is (or always was) a job of its own. */
  batch: string | undefined;
  /**
   * Why its run in a batch failed for good, as its `ended` signal said: what it ends with when its
   * batch's hash and job are gone (expired: `retainSeconds`).
   */
  failure: SignalFailure | undefined;
  /** Run to continue its journal (`troupe resume`, a resumed Supervisor): it has one before any worker takes it. */
  readonly resumed: boolean;
}

/** An agent run in this event-loop turn, its job not added yet. */
interface PendingRun {
  readonly spec: ActorSpec;
  readonly agent: RemoteAgent;
}

export class RedisEngine implements Engine {
  readonly backend = 'redis';
  /** Identifies this supervisor's signal and request streams. */
  readonly id = randomUUID();
  readonly #options: RedisEngineOptions;
  readonly #context: EngineContext;
  readonly #host: EngineHost;
  #wantedSignals: readonly OptionalSignal[] = [];
  readonly #keys: ScaleoutKeys;
  readonly #agents = new Map<string, RemoteAgent>();
  #connections: Connections | undefined;
  #starting: Promise<void> | undefined;
  #reading: Promise<void> | undefined;
  #reconcileTimer: NodeJS.Timeout | undefined;
  #reconciling = false;
  #stopped = false;
  /** When an agent of this supervisor last started on a worker. */
  #lastStartAt = 0;
  /** `jobs:unserved` was emitted and no agent has started since. */
  #unservedReported = false;
  /** Agents run in this turn; their jobs are added at its end. */
  #pending: PendingRun[] = [];
  /** Batch job id -> its agents this supervisor has not settled. */
  readonly #batches = new Map<string, Set<string>>();
  /** Batch additions whose follow-up (cancel flags, removal) has not finished: close waits for them. */
  readonly #adding = new Set<Promise<unknown>>();
  /** Terminal events being appended to the journals of agents the engine ended: close waits for them. */
  readonly #ending = new Set<Promise<unknown>>();
  /** Finished jobs being removed once read (`retainSeconds: 0`): close waits for them. */
  readonly #removing = new Set<Promise<unknown>>();
  /** Batch jobs whose removal a worker holding them refused (`retainSeconds: 0`) -> tries left. */
  readonly #unremovedBatches = new Map<string, number>();
  /** Ended agents' spend being added to the run budget in Redis (`countEnded`): close waits for them. */
  readonly #counting = new Set<Promise<unknown>>();
  /** Runs while the connection to Redis is lost; fires after `redisDownTimeoutMs`. */
  #downTimer: NodeJS.Timeout | undefined;
  /** Set while Redis has been unreachable past `redisDownTimeoutMs`: agents run meanwhile fail with it. */
  #lost: SystemError | undefined;
  #lastRedisError: string | undefined;
  /** When the unanswered PING that watches for a stalled server was sent (Date.now()). */
  #pingSentAt: number | undefined;
  #secretKeyPair: SecretKeyPair | undefined;
  /** Credentials registered on workers (the `secrets` signal), masked here too. */
  readonly #secrets = new ForwardedSecrets();
  /** An entry of the streams too large to read and naming none of its agents was dropped (said once). */
  #droppedEntry = false;
  /** Why `secrets` signals were refused so far (each said once). */
  readonly #secretsRefused = new Set<SecretsRefusal>();
  /** The journal streams' heads, by the parent they name (childStarts; read once per engine). */
  #childIndex: RedisChildIndex | undefined;

  constructor(options: RedisEngineOptions, context: EngineContext) {
    this.#options = options;
    this.#context = context;
    this.#host = context.host;
    this.#keys = new ScaleoutKeys(options.redis.prefix, options.redis.queueName);
    warnOfSecretOptions(options.providers);
  }

  checkAgentId(id: string): void {
    checkAgentId(id);
  }

  start(): Promise<void> {
    this.#starting ??= this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const { redisUrl: url, connectTimeoutMs, reconcileIntervalMs } = this.#options.redis;
    const redis = connectRedis(url, 'troupe-supervisor');
    // Without a listener, a connection error event would crash the process; the client reconnects.
    redis.on('error', (error: Error) => {
      this.#lastRedisError = error.message;
    });
    try {
      await waitForRedis(redis, url, connectTimeoutMs);
    } catch (error) {
      redis.disconnect();
      throw error;
    }
    const reader = redis.duplicate({ enableAutoPipelining: false });
    reader.on('error', () => {});
    const { Job: jobs, Queue } = bullmq();
    const queue = new Queue<AgentJobData | BatchJobData, AgentOutcome | null>(
      this.#keys.queue,
      bullQueueOptions(url, this.#keys.prefix),
    );
    queue.on('error', () => {});
    this.#connections = {
      redis,
      reader,
      queue,
      jobs,
      inbox: new Inbox(redis, this.#keys, this.#options.maxPendingInstructions),
      approvals: new RedisApprovals(redis, this.#keys),
    };
    await queue.waitUntilReady();
    // Commands wait through a Redis restart (connection.ts); a server gone for good is bounded here.
    redis.on('close', () => this.#redisDown());
    redis.on('ready', () => this.#redisUp());
    this.#reading = readSupervisorStreams({
      reader,
      signals: this.#keys.signals(this.id),
      requests: this.#keys.requests(this.id),
      stopped: () => this.#stopped,
      onSignal: (signal) => this.#onSignal(signal),
      onCall: (call) => void this.#answer(call),
      onRefused: (entry) => this.#refuseEntry(entry),
    });
    this.#reconcileTimer = setInterval(() => {
      this.#watchRedis(redis);
      void this.#reconcile();
      void this.#watchUnserved();
      void this.#boundEventsStream(redis);
      for (const [batchId, tries] of this.#unremovedBatches) this.#removeBatch(batchId, tries);
    }, reconcileIntervalMs);
    this.#reconcileTimer.unref();
  }

  run(spec: ActorSpec): void {
    const agent: RemoteAgent = {
      state: 'adding',
      cancelled: undefined,
      sends: Promise.resolve(),
      collecting: false,
      heardAt: 0,
      checkAt: Number.POSITIVE_INFINITY,
      backoffMs: 0,
      started: false,
      batch: undefined,
      failure: undefined,
      resumed: spec.resume,
    };
    this.#agents.set(spec.agentId, agent);
    if (this.#pending.length === 0) setImmediate(() => this.#addPending());
    this.#pending.push({ spec, agent });
  }

  /**
   * Adds the jobs of the agents run in this turn: one batch job per `maxBatchSize` of them (sizes
   * spread evenly), in one round trip; a batch of one is a job of its own.
   */
  #addPending(): void {
    const pending = this.#pending;
    this.#pending = [];
    const lost = this.#lost;
    if (lost !== undefined) {
      for (const { spec } of pending)
        this.#end(spec.agentId, failedOutcome(spec.agentId, 'crashed', lost.toJSON()));
      return;
    }
    const built: { readonly run: PendingRun; readonly data: AgentJobData }[] = [];
    for (const run of pending) {
      try {
        built.push({ run, data: this.#jobData(run.spec) });
      } catch (error) {
        this.#end(run.spec.agentId, failedOutcome(run.spec.agentId, 'crashed', serializeError(error)));
      }
    }
    const count = Math.ceil(built.length / this.#options.redis.maxBatchSize);
    const batches: (typeof built)[] = [];
    for (let index = 0; index < count; index += 1) {
      batches.push(
        built.slice(
          Math.floor((index * built.length) / count),
          Math.floor(((index + 1) * built.length) / count),
        ),
      );
    }
    const jobs = [];
    const added: { readonly batchId: string; readonly runs: readonly PendingRun[] }[] = [];
    for (const batch of batches) {
      const [only] = batch;
      if (batch.length === 1 && only !== undefined) {
        this.#add(only.run.spec, only.run.agent, only.data).catch((error: unknown) =>
          this.#end(
            only.run.spec.agentId,
            failedOutcome(only.run.spec.agentId, 'crashed', serializeError(error)),
          ),
        );
        continue;
      }
      // Not an agent id: agent ids have no '~'.
      const batchId = `batch~${randomUUID()}`;
      const retain = this.#options.redis.retainSeconds;
      const { maxRetries, baseDelayMs } = this.#options.restart;
      jobs.push({
        name: BATCH_JOB_NAME,
        data: batchJobData(
          batch.map((entry) => entry.data),
          { attempts: maxRetries + 1, backoffMs: baseDelayMs },
        ),
        opts: {
          jobId: batchId,
          // A run that fails is retried in a job of the agent's own (batch-job.ts), not with the batch.
          attempts: 1,
          ...batchJobRemoval(retain),
        },
      });
      added.push({ batchId, runs: batch.map((entry) => entry.run) });
    }
    if (jobs.length === 0) return;
    const adding = (async () => this.#connected().queue.addBulk(jobs))();
    const followUp = adding.then(
      () => {
        const removals: Promise<unknown>[] = [];
        for (const { batchId, runs } of added) {
          const unsettled = new Set<string>();
          const cancelling: Promise<void>[] = [];
          for (const { spec, agent } of runs) {
            if (!this.#agents.has(spec.agentId) && agent.cancelled === undefined) continue;
            agent.batch = batchId;
            if (agent.cancelled === undefined) unsettled.add(spec.agentId);
            const done = this.#added(spec.agentId, agent).catch(() => {});
            if (agent.cancelled !== undefined) cancelling.push(done);
          }
          if (unsettled.size > 0) this.#batches.set(batchId, unsettled);
          else if (cancelling.length > 0) {
            // Every agent of the batch was settled while it was being added, some by a cancel: no
            // stop() will remove the job, so it goes now, once their cancel flags are set (a worker
            // that took it meanwhile holds its lock, which refuses the removal, and ends them at
            // once). A batch whose agents all ended otherwise (a worker ran them) keeps its job.
            // With retainSeconds 0 its hash goes too, as once a batch's agents are all read: the
            // worker that took it wrote their (cancelled) outcomes there.
            removals.push(
              Promise.all(cancelling)
                .then(async () => {
                  if (this.#options.redis.retainSeconds === 0)
                    this.#removeBatch(batchId, BATCH_REMOVAL_TRIES);
                  else await this.#connected().queue.remove(batchId);
                })
                .catch(() => 0),
            );
          }
        }
        return Promise.all(removals);
      },
      (error: unknown) => {
        for (const { runs } of added) {
          for (const { spec } of runs)
            this.#end(spec.agentId, failedOutcome(spec.agentId, 'crashed', serializeError(error)));
        }
      },
    );
    this.#adding.add(followUp);
    void followUp.finally(() => this.#adding.delete(followUp));
  }

  #jobData(spec: ActorSpec): AgentJobData {
    return jobData(spec, {
      options: this.#options,
      hostTools: this.#context.hostTools,
      supervisorId: this.id,
      wantedSignals: this.#wantedSignals,
      secretsKey: this.#secretKeys().publicKey,
    });
  }

  /**
   * A `secrets` signal this supervisor will not open (secret-box.ts): dropped, and said once per
   * reason as a process warning (code `TROUPE_SECRETS_REFUSED`), however many come.
   */
  #refuseSecrets(agentId: unknown, reason: SecretsRefusal): void {
    if (this.#secretsRefused.has(reason)) return;
    this.#secretsRefused.add(reason);
    const agent = typeof agentId === 'string' ? JSON.stringify(agentId.slice(0, 200)) : 'unnamed';
    process.emitWarning(
      `refused a secrets signal from a worker (agent ${agent}): ${SECRETS_REFUSALS[reason]}; its values are not masked here. Later ones refused for the same reason are dropped without a word.`,
      { type: 'TroupeWarning', code: 'TROUPE_SECRETS_REFUSED', detail: reason },
    );
  }

  /**
   * An entry of this supervisor's signal or request stream too large to read (supervisor-streams.ts):
   * the agent it names, if this supervisor runs it, fails `signal_too_large` (journalled, its worker
   * told to stop it); one naming none of them is dropped. Said as a process warning (code
   * `TROUPE_SIGNAL_TOO_LARGE`), once per agent failed and once for all the drops.
   */
  #refuseEntry(entry: RefusedEntry): void {
    const { stream, size, agentId } = entry;
    const agent = agentId === undefined ? undefined : this.#agents.get(agentId);
    const what = `an entry of ${size} bytes on the supervisor's ${stream} stream, more than one may hold (${MAX_STREAM_ENTRY_BYTES})`;
    if (agentId === undefined || agent === undefined) {
      if (this.#droppedEntry) return;
      this.#droppedEntry = true;
      process.emitWarning(
        `dropped ${what}, unread: it names no agent this supervisor runs. Later ones are dropped without a word.`,
        { type: 'TroupeWarning', code: 'TROUPE_SIGNAL_TOO_LARGE' },
      );
      return;
    }
    const error = new SystemError('signal_too_large', `Agent ${agentId} was failed: a worker wrote ${what}`, {
      agentId,
      size,
      limit: MAX_STREAM_ENTRY_BYTES,
      stream,
    });
    process.emitWarning(error.message, { type: 'TroupeWarning', code: 'TROUPE_SIGNAL_TOO_LARGE' });
    if (agent.state === 'running') this.#cancelRemote(agentId, error.message).catch(() => {});
    this.#endJournalled(agentId, failedOutcome(agentId, 'crashed', error.toJSON()));
  }

  /** Made on first use: workers seal the credentials they send this supervisor for it (secret-box.ts). */
  #secretKeys(): SecretKeyPair {
    this.#secretKeyPair ??= new SecretKeyPair();
    return this.#secretKeyPair;
  }

  async #add(spec: ActorSpec, agent: RemoteAgent, data: AgentJobData): Promise<void> {
    await this.#connected().queue.add(AGENT_JOB_NAME, data, {
      jobId: spec.agentId,
      // Retries cover failures of the run itself (lost journal writes), not the agent's own failures.
      attempts: this.#options.restart.maxRetries + 1,
      backoff: { type: 'exponential', delay: this.#options.restart.baseDelayMs },
      ...jobRemoval(this.#options.redis.retainSeconds),
    });
    await this.#added(spec.agentId, agent);
  }

  /** The agent's job was added. */
  async #added(agentId: string, agent: RemoteAgent): Promise<void> {
    if (agent.cancelled !== undefined) {
      // Cancelled (and settled) while the job was being added: make sure the job ends too.
      await this.#cancelRemote(agentId, agent.cancelled);
      return;
    }
    this.#heard(agent);
    agent.state = 'running';
  }

  deliver(agentId: string, message: AgentMessage): Promise<number | undefined> {
    const agent = this.#agents.get(agentId);
    if (message.type === 'instruction') {
      const delivered = (agent?.sends ?? Promise.resolve()).then(() =>
        this.#instruct(agentId, message.text, message.index),
      );
      if (agent) agent.sends = delivered.catch(() => {});
      return delivered;
    }
    if (message.type === 'approval') {
      return this.#decide(agentId, message.requestId, message.decision).then(() => undefined);
    }
    if (message.type === 'cancel_turn') {
      const { redis } = this.#connected();
      return sendTurnCancel(redis, this.#keys, agentId, message.turn, message.reason).then(() => undefined);
    }
    if (!agent) return Promise.resolve(undefined);
    if (agent.state === 'adding') {
      agent.cancelled = message.reason;
      const outcome = failedOutcome(agentId, 'cancelled', cancelledError(message.reason));
      // Only a resumed agent has a journal to end: a fan-out's cancel of thousands reads none.
      if (agent.resumed) this.#endJournalled(agentId, outcome);
      else this.#end(agentId, outcome);
      return Promise.resolve(undefined);
    }
    // Redis is unreachable when this fails: the supervisor's grace timer stops the agent.
    return this.#cancelRemote(agentId, message.reason).then(() => undefined);
  }

  /**
   * No worker ended the cancelled agent in time (no worker is running, or the agent's worker is
   * unresponsive or died): remove its job if no worker holds it, and settle the agent, its
   * Failed(cancelled) journalled with what its journal says it spent (see #endJournalled). The
   * cancel flag stays, so a worker that takes the job later ends it at once. A batch job is removed (when no
   * worker holds it) once every agent of it this supervisor ran is settled, here or, for agents
   * cancelled while the job was being added, once the addition is answered (close waits for it).
   */
  stop(agentId: string, reason: string): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    const { queue } = this.#connected();
    const batchId = agent.batch;
    const removals = [queue.remove(agentId).catch(() => 0)];
    if (batchId !== undefined && this.#leaveBatch(agentId, batchId)) {
      removals.push(queue.remove(batchId).catch(() => 0));
    }
    void Promise.all(removals).then(() =>
      this.#endJournalled(agentId, failedOutcome(agentId, 'cancelled', cancelledError(reason))),
    );
  }

  /** The agent's journal as stored in Redis (any agent of this queue, not only this supervisor's). */
  async journal(agentId: string): Promise<AuditEvent[]> {
    checkAgentId(agentId);
    await this.start();
    return readRedisJournal(this.#connected().redis, this.#keys.journal(agentId));
  }

  async childStarts(parentId: string, bounds: JournalScanBounds): Promise<ChildStarts> {
    await this.start();
    if (this.#childIndex === undefined) {
      // Every journal stream of this queue (a fork's draft key ends in `:fork` and is not matched).
      const glob = (text: string): string => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
      const pattern = `${glob(this.#keys.prefix)}:${glob(this.#keys.queue)}:agent:*:journal`;
      this.#childIndex = new RedisChildIndex(this.#connected().redis, {
        pattern,
        registry: this.#keys.journals,
        seq: this.#keys.journalsSeq,
        keyOf: (agentId) => this.#keys.journal(agentId),
      });
    }
    return this.#childIndex.childStarts(parentId, bounds);
  }

  async endJournal(agentId: string, outcome: AgentOutcome): Promise<AgentOutcome> {
    checkAgentId(agentId);
    await this.start();
    return journalOutcome(this.#connected().redis, this.#keys.journal(agentId), outcome);
  }

  async forkJournal(from: string, to: string): Promise<UsageTotals> {
    checkAgentId(from);
    checkAgentId(to);
    await this.start();
    const { redis } = this.#connected();
    const target = this.#keys.journal(to);
    const inputs = forkedInputs(await readRedisJournal(redis, this.#keys.journal(from)), to, from);
    const totals = forkedTotals(inputs);
    if (inputs.length === 0 || (await redis.exists(target)) > 0) return totals;
    // Written under a draft key, then renamed: a fork cut off half way leaves no journal.
    const draft = `${target}:fork`;
    await redis.del(draft);
    const journal = new RedisJournal({ redis, key: draft });
    writeFork(journal, inputs);
    await journal.flushed();
    await renameJournal(redis, draft, target);
    await redis.del(draft);
    return totals;
  }

  /**
   * With runLimits: adds to the workers' count in Redis what the ended agent spent beyond the
   * receipts they counted for it (run-budget.ts `countEndedAgent`). Best effort, as the workers'
   * counts are: with Redis gone, the supervisor's own count still has it.
   */
  countEnded(agentId: string, spent: InheritedSpend): void {
    const limits = this.#options.runLimits;
    const connections = this.#connections;
    if (limits === undefined || (limits.maxTotalTokens <= 0 && limits.maxCostUsd <= 0)) return;
    if (connections === undefined || this.#lost !== undefined) return;
    const tokens = spent.usage.inputTokens + spent.usage.outputTokens;
    // Nothing to add (an agent refused, or cancelled before its job ran): no round trip. A count
    // of its own, if its job made one, goes with the hash.
    if (tokens === 0 && (spent.costUsd ?? 0) === 0) return;
    const counting = countEndedAgent(
      connections.redis,
      this.#keys.runBudget(this.id),
      agentId,
      tokens,
      spent.costUsd,
    ).catch(() => {});
    this.#counting.add(counting);
    void counting.finally(() => this.#counting.delete(counting));
  }

  /** Threads belong to the worker processes: there is nothing to measure here. */
  async measure(): Promise<HostStats[]> {
    return [];
  }

  async describe(): Promise<EngineDescription> {
    await this.start();
    const { redisUrl, queueName, prefix } = this.#options.redis;
    const workers = await connectedWorkers(this.#connected().redis, this.#keys);
    return { backend: 'redis', url: displayUrl(redisUrl), queue: queueName, prefix, workers };
  }

  /** The connection to Redis closed: Redis gets `redisDownTimeoutMs` to come back. */
  #redisDown(): void {
    const ms = this.#options.redis.redisDownTimeoutMs;
    if (this.#stopped || ms === 0 || this.#downTimer !== undefined || this.#lost !== undefined) return;
    this.#downTimer = setTimeout(() => this.#redisLost(ms, 'closed'), ms);
  }

  /**
   * A server that stalls (SIGSTOP, `CLIENT PAUSE`, a hung host) keeps its connections open, so no
   * 'close' says so: one PING at a time, and one unanswered for `redisDownTimeoutMs` counts as lost.
   */
  #watchRedis(redis: Redis): void {
    const ms = this.#options.redis.redisDownTimeoutMs;
    if (ms === 0 || this.#stopped) return;
    const sentAt = this.#pingSentAt;
    if (sentAt !== undefined) {
      if (Date.now() - sentAt >= ms) this.#redisLost(ms, 'silent');
      return;
    }
    // While the connection is down, the 'close' timer watches.
    if (redis.status !== 'ready') return;
    this.#pingSentAt = Date.now();
    redis.ping().then(
      () => {
        this.#pingSentAt = undefined;
        if (this.#downTimer === undefined && redis.status === 'ready') this.#lost = undefined;
      },
      () => {
        this.#pingSentAt = undefined;
      },
    );
  }

  #redisUp(): void {
    if (this.#downTimer !== undefined) clearTimeout(this.#downTimer);
    this.#downTimer = undefined;
    this.#lost = undefined;
  }

  /**
   * Redis stayed unreachable for `ms`: every agent this supervisor runs fails with
   * `redis_unreachable` (their jobs and journals are on the server, for `troupe resume` once it is
   * back), and so does every agent run until it is back.
   */
  #redisLost(ms: number, how: 'closed' | 'silent'): void {
    if (how === 'closed') this.#downTimer = undefined;
    if (this.#lost !== undefined) return;
    const url = displayUrl(this.#options.redis.redisUrl);
    const cause = this.#lastRedisError === undefined ? '' : ` (${this.#lastRedisError})`;
    const lost = new SystemError(
      'redis_unreachable',
      how === 'closed'
        ? `Lost the connection to Redis at ${url} and it did not come back within ${ms} ms (redisDownTimeoutMs)${cause}`
        : `Redis at ${url} did not answer for ${ms} ms (redisDownTimeoutMs): is the server paused, stopped or overloaded?`,
      { url, timeoutMs: ms },
    );
    this.#lost = lost;
    const error = lost.toJSON();
    for (const agentId of [...this.#agents.keys()])
      this.#end(agentId, failedOutcome(agentId, 'crashed', error));
  }

  async close(): Promise<void> {
    if (!this.#starting) return;
    await this.#starting.catch(() => {});
    const connections = this.#connections;
    if (!connections) return;
    this.#stopped = true;
    if (this.#downTimer !== undefined) clearTimeout(this.#downTimer);
    if (this.#reconcileTimer) clearInterval(this.#reconcileTimer);
    connections.reader.disconnect();
    if (this.#lost !== undefined) {
      // Nothing sent now would be answered: drop what waits for Redis rather than wait for ever
      // (neither a read blocked on a disconnected client nor BullMQ's disconnect settles then).
      connections.redis.disconnect();
      connections.queue.disconnect().catch(() => {});
      return;
    }
    await this.#reading;
    await Promise.all([...this.#agents.values()].map((agent) => agent.sends));
    await Promise.all(this.#adding);
    await Promise.all(this.#ending);
    await Promise.all(this.#removing);
    await this.#removeHeldBatches();
    // After the ends: an end settled above counts here, before the budget's hash is deleted.
    await Promise.all(this.#counting);
    await connections.redis
      .del(
        this.#keys.signals(this.id),
        this.#keys.requests(this.id),
        this.#keys.runBudget(this.id),
        this.#keys.supervisorAlive(this.id),
      )
      .catch(() => 0);
    await connections.queue.close();
    await closeRedis(connections.redis);
  }

  #connected(): Connections {
    const connections = this.#connections;
    if (!connections) throw new SystemError('not_started', 'The supervisor is not connected to Redis yet');
    return connections;
  }

  #end(agentId: string, outcome: AgentOutcome): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    this.#agents.delete(agentId);
    if (agent.batch !== undefined) this.#leaveBatch(agentId, agent.batch);
    this.#host.ended(agentId, outcome);
  }

  /**
   * {@link #end} for an end the engine decided while no worker runs the agent (its job failed or is
   * gone, or its cancel outlived `graceMs`): its terminal event goes to its journal first, with the
   * totals the journal holds, and that outcome is delivered (journal-end.ts).
   */
  #endJournalled(agentId: string, outcome: AgentOutcome): void {
    const agent = this.#agents.get(agentId);
    const connections = this.#connections;
    if (!agent) return;
    if (connections === undefined) {
      this.#end(agentId, outcome);
      return;
    }
    // Forgotten at once, as #end does: nothing else settles it meanwhile.
    this.#agents.delete(agentId);
    if (agent.batch !== undefined) this.#leaveBatch(agentId, agent.batch);
    const ending = journalOutcome(connections.redis, this.#keys.journal(agentId), outcome).then((ended) =>
      this.#host.ended(agentId, ended),
    );
    this.#ending.add(ending);
    void ending.finally(() => this.#ending.delete(ending));
  }

  /**
   * Forgets that `agentId` runs in `batchId`; true when it was the batch's last unsettled agent,
   * whose batch then gets its retention (see {@link #batchSettled}).
   */
  #leaveBatch(agentId: string, batchId: string): boolean {
    const unsettled = this.#batches.get(batchId);
    if (!unsettled?.delete(agentId) || unsettled.size > 0) return false;
    this.#batches.delete(batchId);
    this.#batchSettled(batchId);
    return true;
  }

  /**
   * Every agent of `batchId` is settled (each outcome read): what the batch leaves in Redis gets its
   * `retainSeconds`. The worker sets it too as the batch ends, but a batch that fails (its workers
   * died past their stalled limit, in BullMQ's own script) has no worker to. With 0, the batch job
   * is removed and its hash deleted (one a worker still holds is refused: that worker expires both
   * as the batch ends, retention.ts); otherwise the hash, and the job once finished, expire.
   */
  #batchSettled(batchId: string): void {
    const retain = this.#options.redis.retainSeconds;
    const ttlMs = batchHashTtlMs(retain);
    if (ttlMs === undefined || this.#connections === undefined || this.#lost !== undefined) return;
    const { redis } = this.#connections;
    const hash = this.#keys.batch(batchId);
    const job = this.#keys.job(batchId);
    if (retain === 0) {
      this.#removeBatch(batchId, BATCH_REMOVAL_TRIES);
      return;
    }
    this.#track(
      (async () => {
        await redis.pexpire(hash, ttlMs);
        if ((await redis.hexists(job, 'finishedOn')) === 1) await redis.pexpire(job, ttlMs);
      })(),
    );
  }

  /**
   * Removes the batch job `batchId` and deletes its hash (`retainSeconds: 0`, every agent read).
   * A worker still holding the job (its last agent's end is signalled before the job finishes)
   * refuses the removal: tried again at each of the next `tries` reconcile ticks, and the hash gets
   * UNREAD_JOB_TTL_MS meanwhile and is marked read (BATCH_READ): the worker, as it ends the batch,
   * deletes the hash and has the job removed as it completes. One whose worker dies first, and
   * whose next worker never ends it (it fails at its stalled limit), expires UNREAD_JOB_TTL_MS after.
   */
  #removeBatch(batchId: string, tries: number): void {
    const connections = this.#connections;
    if (connections === undefined || this.#lost !== undefined) return;
    const { redis, queue } = connections;
    const hash = this.#keys.batch(batchId);
    this.#unremovedBatches.delete(batchId);
    this.#track(
      (async () => {
        await queue.remove(batchId).catch(() => 0);
        // Held: marked read, so the worker that ends the batch deletes the hash and has the job
        // removed (batch-job.ts), though this supervisor has closed by then.
        const held = await markBatchRead(redis, this.#keys.job(batchId), hash, UNREAD_JOB_TTL_MS);
        if (held && tries > 1) this.#unremovedBatches.set(batchId, tries - 1);
      })(),
    );
  }

  /**
   * At close, with `retainSeconds: 0`: the batches whose agents were all read and whose removal a
   * worker refused (it still held the job, having just signalled the last agent's end) are tried
   * again every CLOSE_BATCH_REMOVAL_POLL_MS for up to CLOSE_BATCH_REMOVAL_MS, as the reconcile
   * ticks that would have tried them no longer run. One still held then is marked read (BATCH_READ):
   * its worker removes it as it ends the batch.
   */
  async #removeHeldBatches(): Promise<void> {
    const deadline = Date.now() + CLOSE_BATCH_REMOVAL_MS;
    while (this.#unremovedBatches.size > 0 && Date.now() < deadline && this.#lost === undefined) {
      await new Promise((resolve) => setTimeout(resolve, CLOSE_BATCH_REMOVAL_POLL_MS));
      // Two tries: one refused again stays in the map for the next round.
      for (const batchId of [...this.#unremovedBatches.keys()]) this.#removeBatch(batchId, 2);
      await Promise.all(this.#removing);
    }
  }

  /** Settles `promise` with close waiting for it; Redis errors are dropped (best effort). */
  #track(promise: Promise<unknown>): void {
    const settling = promise.catch(() => {
      // Redis is unreachable: the hash expires as the batch ends (retention.ts), or stays.
    });
    this.#removing.add(settling);
    void settling.finally(() => this.#removing.delete(settling));
  }

  async #instruct(agentId: string, text: string, index: number | undefined): Promise<number> {
    await this.start();
    const { inbox, queue, jobs } = this.#connected();
    const sent = await inbox.send(agentId, text, index);
    if (sent.parked) {
      const job = await jobs.fromId(queue, agentId);
      if (job) await promote(job);
    }
    return sent.index;
  }

  /** Records a decision (the first one wins) and wakes the agent's job if it is parked on it. */
  async #decide(agentId: string, requestId: string, decision: ApprovalDecision): Promise<void> {
    await this.start();
    const { approvals, queue, jobs } = this.#connected();
    const result = await approvals.decide(agentId, requestId, decision);
    if (!result.parked) return;
    const job = await jobs.fromId(queue, agentId);
    if (job) await promote(job);
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
   * The per-request signals the supervisor now listens for. Workers cannot be told mid-run (the
   * only way to them is the job), so each agent's job carries the set as it is when the agent is
   * run: listeners added in the same turn as `spawn()` count, a listener added later gets these
   * signals from agents run after it.
   */
  wantSignals(kinds: readonly OptionalSignal[]): void {
    this.#wantedSignals = [...kinds];
  }

  #onSignal(signal: WorkerSignal): void {
    if (signal.type === 'secrets') {
      // Credentials this supervisor's runs registered on the worker: results are masked here.
      const opened = this.#secretKeys().openValues(signal.sealed);
      if ('refused' in opened) this.#refuseSecrets(signal.agentId, opened.refused);
      // Not a worker's own should one run in this thread: it would send them to its supervisors.
      else registerReceived(() => this.#secrets.register(opened.values));
      return;
    }
    const agent = this.#agents.get(signal.agentId);
    if (!agent) return;
    if (signal.type === 'ended') {
      // An outcome in the signal is already stored in the agent's batch (batch-job.ts).
      if (isOutcome(signal.outcome, signal.agentId)) {
        this.#end(signal.agentId, signal.outcome);
      } else {
        agent.failure = readSignalFailure(signal.failure) ?? agent.failure;
        void this.#collect(signal.agentId, agent);
      }
      return;
    }
    this.#heard(agent);
    const { agentId } = signal;
    switch (signal.type) {
      case 'started':
        agent.started = true;
        this.#lastStartAt = agent.heardAt;
        this.#unservedReported = false;
        this.#host.report({ type: 'started', agentId, hostId: signal.workerId, resumed: signal.resumed });
        if (signal.restart > 0) {
          const message =
            "The agent's previous run ended without finishing (its worker died or lost the job); it resumed from its journal";
          const cause = new SystemError('worker_lost', message, { hostId: signal.workerId }).toJSON();
          this.#host.report({ type: 'restarted', agentId, restart: signal.restart, cause, charged: true });
        }
        return;
      case 'parked':
        this.#host.report({ type: 'parked', agentId, hostId: signal.workerId, index: signal.index });
        return;
      case 'backoff':
        this.#host.emit('provider:backoff', { provider: signal.provider, retryAfterMs: signal.retryAfterMs });
        return;
      case 'paused': {
        const { provider, waitMs } = signal;
        this.#host.emit('provider:paused', { agentId, provider, hostId: signal.workerId, waitMs });
        return;
      }
      default:
        this.#host.report(signal);
    }
  }

  /**
   * Says so once when jobs have waited `unservedAfterMs` untaken and no agent of this supervisor
   * started meanwhile: no worker serves the queue (or all are busy with other supervisors' jobs).
   */
  async #watchUnserved(): Promise<void> {
    const { unservedAfterMs, redisUrl, queueName, prefix } = this.#options.redis;
    const now = Date.now();
    if (this.#unservedReported || this.#stopped || now - this.#lastStartAt < unservedAfterMs) return;
    const untaken = [...this.#agents.values()].filter((agent) => agent.state === 'running' && !agent.started);
    const overdue = untaken.filter((agent) => now - agent.heardAt >= unservedAfterMs);
    if (overdue.length === 0) return;
    this.#unservedReported = true;
    const workers = await connectedWorkers(this.#connected().redis, this.#keys).catch(() => 0);
    this.#host.emit('jobs:unserved', {
      // Every job added and not taken, not only those past the threshold: jobs added a few
      // milliseconds after the first were left out of the count when the check fell between them.
      waiting: untaken.length,
      waitedMs: now - Math.min(...overdue.map((agent) => agent.heardAt)),
      workers,
      url: displayUrl(redisUrl),
      queue: queueName,
      prefix,
    });
  }

  async #answer(call: SupervisorRequest): Promise<void> {
    if (call.type === 'tool_span') {
      const span = this.#host.toolSpan(call.agentId, call.name, call.callId, call.at);
      await answerToolSpan(this.#connected().redis, this.#keys, call.requestId, span).catch(() => {
        // The worker's wait is bounded: its tool runs in the agent's context.
      });
      return;
    }
    const outcome = await this.#host.callHostTool(
      call.agentId,
      call.name,
      call.args,
      call.callId,
      call.resume === true,
    );
    await answerHostCall(this.#connected().redis, this.#keys, call.requestId, outcome).catch(() => {
      // The worker waiting for it is gone or Redis is: the resumed agent asks for the kept outcome.
    });
  }

  /**
   * Reads the agent's job state and settles the agent if the job has finished. Only the fields
   * the outcome needs: the whole job (its data is the agent's spec) would be sent and parsed for
   * every agent. An agent of a batch: its field of the batch's hash, and the batch job's state.
   */
  async #collect(agentId: string, agent: RemoteAgent): Promise<void> {
    if (agent.state !== 'running' || agent.collecting) return;
    agent.collecting = true;
    try {
      if (agent.batch !== undefined && (await this.#collectFromBatch(agentId, agent, agent.batch))) return;
      const { redis } = this.#connected();
      const jobKey = this.#keys.job(agentId);
      const [timestamp, finishedOn, failedReason, attempts] = await redis.hmget(
        jobKey,
        'timestamp',
        'finishedOn',
        'failedReason',
        'atm',
      );
      // Every BullMQ job hash has a timestamp: without one, the job is gone.
      if (timestamp === null || timestamp === undefined) {
        this.#endJournalled(agentId, jobLost(agentId, agentId));
        return;
      }
      if (!finishedOn) return;
      const returnvalue = await boundedOutcome(redis, jobKey, 'returnvalue');
      const value = typeof returnvalue === 'number' ? undefined : parseJson(returnvalue);
      if (typeof returnvalue === 'number') {
        this.#endJournalled(agentId, outcomeTooLarge(agentId, agentId, returnvalue));
      } else if (isOutcome(value, agentId)) {
        this.#end(agentId, value);
      } else {
        this.#endJournalled(agentId, jobFailed(agentId, failedReason ?? undefined, Number(attempts ?? 0)));
      }
      if (this.#options.redis.retainSeconds === 0) this.#removeJob(agentId);
    } catch {
      // Redis is unreachable: the next reconcile tries again.
    } finally {
      agent.collecting = false;
    }
  }

  /**
   * Settles an agent of a batch from the batch's hash and job. False when the batch handed it off
   * to a job of its own (now its job).
   */
  async #collectFromBatch(agentId: string, agent: RemoteAgent, batchId: string): Promise<boolean> {
    const { redis } = this.#connected();
    const [entry, ownJob] = await Promise.all([
      boundedOutcome(redis, this.#keys.batch(batchId), agentId),
      redis.exists(this.#keys.job(agentId)),
    ]);
    if (typeof entry === 'number') {
      this.#endJournalled(agentId, outcomeTooLarge(agentId, batchId, entry));
      return true;
    }
    // A job of its own is the hand-off too: the batch's hash may be gone already (it expired, or
    // with `retainSeconds: 0` this supervisor deleted it once its other agents were settled).
    if (entry === HANDED_OFF || (entry === null && ownJob > 0)) {
      agent.batch = undefined;
      this.#leaveBatch(agentId, batchId);
      return false;
    }
    const result = parseJson(entry) as Partial<BatchResult> | undefined;
    if (result !== undefined && 'outcome' in result && isOutcome(result.outcome, agentId)) {
      this.#end(agentId, result.outcome);
      return true;
    }
    if (result !== undefined && 'failed' in result) {
      this.#endJournalled(agentId, jobFailed(agentId, String(result.failed), 1));
      return true;
    }
    // Not ended in the batch: only the batch job's state can say more.
    const [timestamp, finishedOn, failedReason] = await redis.hmget(
      this.#keys.job(batchId),
      'timestamp',
      'finishedOn',
      'failedReason',
    );
    const { failure } = agent;
    if (failure !== undefined && (timestamp === null || timestamp === undefined || finishedOn)) {
      // Its worker said why (and the batch's hash and job are gone: expired, or removed).
      this.#endJournalled(agentId, jobFailed(agentId, `${failure.code}: ${failure.message}`, 1, failure));
    } else if (timestamp === null || timestamp === undefined) {
      this.#endJournalled(agentId, jobLost(agentId, batchId));
    } else if (finishedOn) {
      // The batch ended without this agent (its data was refused, or its workers died too often).
      this.#endJournalled(agentId, jobFailed(agentId, failedReason ?? undefined, 1));
    }
    return true;
  }

  /**
   * Removes a finished job of an agent's own once its outcome was read (`retainSeconds: 0`,
   * retention.ts). Best effort: one left behind expires UNREAD_JOB_TTL_MS after it ended.
   */
  #removeJob(jobId: string): void {
    const removing = this.#connected()
      .queue.remove(jobId)
      .catch(() => 0);
    this.#removing.add(removing);
    void removing.finally(() => this.#removing.delete(removing));
  }

  /**
   * Sets the queue's events stream length back to EVENTS_STREAM_MAX_LENGTH while this supervisor
   * runs agents: a BullMQ Queue opened without it (by a worker, supervisor or `troupe approve` of an
   * earlier version, or another program) writes BullMQ's default of 10,000 when it opens, and the
   * stream would keep that many job ends, their outcomes unmasked. One read per
   * `reconcileIntervalMs`, a write only when it changed: BullMQ trims the stream again at the next
   * job end.
   */
  async #boundEventsStream(redis: Redis): Promise<void> {
    if (this.#stopped || this.#agents.size === 0 || redis.status !== 'ready') return;
    const field = 'opts.maxLenEvents';
    try {
      const length = await redis.hget(this.#keys.queueMeta, field);
      if (length !== String(EVENTS_STREAM_MAX_LENGTH)) {
        await redis.hset(this.#keys.queueMeta, field, EVENTS_STREAM_MAX_LENGTH);
      }
    } catch {
      // Redis is unreachable: the next tick tries again.
    }
  }

  /** A worker said something about `agent` (or its job was just added): its next read is an interval away. */
  #heard(agent: RemoteAgent): void {
    const interval = this.#options.redis.reconcileIntervalMs;
    agent.heardAt = Date.now();
    agent.backoffMs = interval;
    agent.checkAt = agent.heardAt + interval;
  }

  /**
   * Looks at the job state of running agents no worker has mentioned for a while, in case an end
   * signal was lost (signals are best effort; job state is not). An agent still running is looked
   * at again after twice the time, up to RECONCILE_MAX_INTERVALS intervals: a lost end signal is
   * found within that bound, and a long-running agent costs a read per that bound, not per interval.
   */
  async #reconcile(): Promise<void> {
    if (this.#reconciling || this.#stopped) return;
    this.#reconciling = true;
    try {
      const now = Date.now();
      const maxBackoffMs = this.#options.redis.reconcileIntervalMs * RECONCILE_MAX_INTERVALS;
      const running = [...this.#agents].filter(([, a]) => a.state === 'running' && a.checkAt <= now);
      for (let start = 0; start < running.length; start += RECONCILE_BATCH) {
        const batch = running.slice(start, start + RECONCILE_BATCH);
        const pipeline = this.#connected().redis.pipeline();
        for (const [agentId, agent] of batch) {
          if (agent.batch === undefined) {
            pipeline.hmget(this.#keys.job(agentId), 'finishedOn', 'timestamp');
          } else {
            // Whether it has a field (set once it ended or left the batch), not the field: an
            // outcome each, 500 of them in one reply, for a yes or no.
            pipeline.hmget(this.#keys.job(agent.batch), 'finishedOn', 'timestamp');
            pipeline.hexists(this.#keys.batch(agent.batch), agentId);
          }
        }
        const replies = (await pipeline.exec()) ?? [];
        let reply = 0;
        for (const [agentId, agent] of batch) {
          const fields = replies[reply]?.[1] as (string | null)[] | undefined;
          const entry = agent.batch === undefined ? 0 : (replies[reply + 1]?.[1] as number | undefined);
          reply += agent.batch === undefined ? 1 : 2;
          // No reply (the read failed): the next tick tries again.
          if (!fields || entry === undefined) continue;
          if (fields[0] !== null || fields[1] === null || entry > 0) {
            void this.#collect(agentId, agent);
          } else if (agent.checkAt <= now) {
            // Still running (and no worker spoke meanwhile): wait longer before the next read.
            agent.backoffMs = Math.min(agent.backoffMs * 2, maxBackoffMs);
            agent.checkAt = now + agent.backoffMs;
          }
        }
      }
    } catch {
      // Redis is unreachable: try again at the next tick.
    } finally {
      this.#reconciling = false;
    }
  }
}

// KEYS: a hash. ARGV: a field, bytes at most. Its value; its size (an integer) when larger; nil.
const BOUNDED_HGET = new LuaScript(
  `local size = redis.call('HSTRLEN', KEYS[1], ARGV[1])
if size > tonumber(ARGV[2]) then return size end
return redis.call('HGET', KEYS[1], ARGV[1])`,
  1,
);

/**
 * Field `field` of hash `key` where an outcome is stored, or its size in bytes when it is larger
 * than MAX_OUTCOME_BYTES: a value that large is never sent (nor parsed). Null when there is none.
 */
async function boundedOutcome(redis: Redis, key: string, field: string): Promise<string | number | null> {
  const value = await BOUNDED_HGET.run(redis, [key], [field, MAX_OUTCOME_BYTES]);
  return typeof value === 'number' || typeof value === 'string' ? value : null;
}

function outcomeTooLarge(agentId: string, jobId: string, size: number): AgentOutcome {
  const error = new SystemError(
    'outcome_too_large',
    `The stored outcome of agent ${agentId} is ${size} bytes, more than a supervisor reads (MAX_OUTCOME_BYTES, ${MAX_OUTCOME_BYTES}): not read`,
    { agentId, jobId, size, limit: MAX_OUTCOME_BYTES },
  );
  return failedOutcome(agentId, 'crashed', error.toJSON());
}

/** A stored JSON text (a job's return value, a batch entry), or undefined when there is none or it does not parse. */
function parseJson(text: string | null | undefined): unknown {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Whether `value` is an outcome of `agentId` the supervisor can settle the agent with: its usage
 * and rounds included (an outcome without them made settling the agent throw, in the stream
 * reader, and the agent never ended).
 */
function isOutcome(value: unknown, agentId: string): value is AgentOutcome {
  if (typeof value !== 'object' || value === null) return false;
  const outcome = value as Partial<Record<keyof AgentOutcome | 'error', unknown>>;
  const usage = outcome.usage as Partial<Record<string, unknown>> | null | undefined;
  const error = outcome.error as Partial<Record<string, unknown>> | null | undefined;
  return (
    (outcome.status === 'completed' || (outcome.status === 'failed' && typeof error?.code === 'string')) &&
    outcome.agentId === agentId &&
    typeof usage?.inputTokens === 'number' &&
    typeof usage.outputTokens === 'number' &&
    typeof outcome.rounds === 'number'
  );
}

function jobLost(agentId: string, jobId: string): AgentOutcome {
  const error = new SystemError('job_lost', `The job of agent ${agentId} is gone from Redis`, {
    agentId,
    jobId,
  });
  return failedOutcome(agentId, 'crashed', error.toJSON());
}

/** `cause`: the failure the agent's `ended` signal carried, when the outcome comes from it. */
function jobFailed(
  agentId: string,
  reason: string | undefined,
  attempts: number,
  cause?: SignalFailure,
): AgentOutcome {
  // BullMQ writes the reason in the same script that ends the job; a Redis refusing writes (at its
  // maxmemory, with noeviction) can leave the job ended without one.
  const why =
    reason === undefined || reason === ''
      ? " with no reason recorded in Redis (see the worker's log; a Redis at its maxmemory refuses the writes that record it)"
      : `: ${reason}`;
  const error = new SystemError('job_failed', `The job of agent ${agentId} failed${why}`, {
    agentId,
    attempts,
    ...(cause === undefined ? {} : { cause }),
  });
  return failedOutcome(agentId, 'crashed', error.toJSON());
}

/** What each refusal of a `secrets` signal means, for its warning. */
const SECRETS_REFUSALS: Readonly<Record<SecretsRefusal, string>> = {
  malformed: 'it is not what a worker seals (four base64 fields of the right sizes, a JSON array of strings)',
  oversize: 'it holds more than a worker sends in one signal',
  not_for_this_key: "it was not sealed with this supervisor's key, or was altered",
  replayed: 'this supervisor opened the same seal before (a replay)',
};

/**
 * Provider options travel in every job, so a key given there is stored in Redis in clear (and in
 * its dump and AOF files), for as long as jobs are kept: said once per provider, as a process
 * warning (code `TROUPE_SECRET_IN_REDIS`). Workers read keys from their own environment.
 */
function warnOfSecretOptions(providers: RedisEngineOptions['providers']): void {
  for (const [name, config] of Object.entries(providers)) {
    if (credentialsIn(config.options?.apiKey, config.options?.headers).length === 0) continue;
    process.emitWarning(
      `providers.${name}.options holds ${config.options?.apiKey === undefined ? 'a credential header' : 'apiKey'}: with backend 'redis' it is stored in Redis in clear in every job. Leave it out; workers read OPENAI_API_KEY / ANTHROPIC_API_KEY from their environment.`,
      { code: 'TROUPE_SECRET_IN_REDIS' },
    );
  }
}
