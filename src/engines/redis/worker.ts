/**
 * A scale-out worker: takes agent jobs and batch jobs (batch-job.ts) from the BullMQ queue and runs
 * their agents in this process, up to `concurrency` agents at once, on the same loop the thread
 * engine runs in its actor hosts. Start as many as you like, on any machine that reaches the Redis
 * server (`troupe worker --redis URL`).
 *
 * Agents run on this process's event loop: they spend their time waiting on providers, tools and
 * Redis, so one process keeps many busy. A worker that dies leaves its jobs' locks to expire; any
 * other worker then takes them over and resumes each agent from its journal stream.
 */
import type { Job, Queue, Worker } from 'bullmq';
import { EventEmitter } from 'eventemitter3';
import type { Redis } from 'ioredis';
import { SystemError } from '../../errors.ts';
import type { AgentOutcome } from '../../loop/types.ts';
import { positiveInt, timeLimit } from '../../option-checks.ts';
import type { AgentJobData, BatchJobData } from '../../protocol/redis.ts';
import { SharedDefinitions } from '../actor/shared-definitions.ts';
import type { TurnCancels } from '../actor/turn-cancels.ts';
import { RedisAdmission } from './admission.ts';
import { processAgentJob } from './agent-job.ts';
import { RedisApprovals } from './approvals.ts';
import { processBatchJob } from './batch-job.ts';
import { BlockingPool } from './blocking-pool.ts';
import {
  bullConnection,
  bullQueueOptions,
  closeRedis,
  connectRedis,
  resolveRedisUrl,
  waitForRedis,
} from './connection.ts';
import {
  BATCH_JOB_NAME,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_KEY_PREFIX,
  DEFAULT_LOCK_DURATION_MS,
  DEFAULT_MAX_BATCH_SIZE,
  DEFAULT_MAX_STALLED_COUNT,
  DEFAULT_QUEUE_NAME,
  DEFAULT_STALLED_INTERVAL_MS,
  DEFAULT_WORKER_CONCURRENCY,
} from './constants.ts';
import { Inbox } from './inbox.ts';
import { checkName, ScaleoutKeys } from './keys.ts';
import { bullmq } from './packages.ts';
import { announceWorker } from './presence.ts';
import { finishedJobTtlMs } from './retention.ts';
import { SecretForwarder } from './secret-forwarder.ts';
import { SignalSender, signalFailure } from './signals.ts';
import type { RedisJournal } from './stream-journal.ts';
import { applyTurnCancel } from './turn-cancel.ts';
import { WorkerResources } from './worker-resources.ts';

/** Options of {@link RedisWorker.start}. */
export interface RedisWorkerOptions {
  /** @default `TROUPE_REDIS_URL` */
  readonly redisUrl?: string;
  /** Agents run at once in this process (a batch job of n agents counts n). @default 64 */
  readonly concurrency?: number;
  /** Must match the supervisors'. @default 'troupe-agents' */
  readonly queueName?: string;
  /** Must match the supervisors'. @default 'troupe' */
  readonly prefix?: string;
  /**
   * Working directory of every agent this worker runs. @default the supervisor's, when that path
   * exists on this machine, else this process's cwd
   */
  readonly cwd?: string;
  /** A job whose worker stops renewing its lock this long is taken over. @default 30000 */
  readonly lockDurationMs?: number;
  /** How often this worker looks for jobs whose worker died. @default 30000 */
  readonly stalledIntervalMs?: number;
  /** Worker deaths one agent survives before its job fails. @default 3 */
  readonly maxStalledCount?: number;
  /** How long to wait for Redis at start before failing with `redis_unreachable`. @default 10000 */
  readonly connectTimeoutMs?: number;
}

/** Events of a {@link RedisWorker}. */
export interface RedisWorkerEvents {
  'job:ended': [event: { readonly agentId: string; readonly status: 'completed' | 'failed' }];
  error: [error: Error];
}

interface Prepared {
  readonly url: string;
  readonly concurrency: number;
  readonly keys: ScaleoutKeys;
  readonly cwd: string | undefined;
  readonly lockDurationMs: number;
  readonly stalledIntervalMs: number;
  readonly maxStalledCount: number;
  readonly connectTimeoutMs: number;
}

/**
 * Checks a worker's options and fills in defaults. Time options arm timers (BullMQ's lock renewal
 * and stalled check, the wait for Redis), so they are refused past MAX_TIMER_MS like every other.
 * Exported for tests.
 */
export function prepareWorkerOptions(options: RedisWorkerOptions): Prepared {
  return {
    url: resolveRedisUrl(options.redisUrl),
    concurrency: positiveInt('concurrency', options.concurrency, DEFAULT_WORKER_CONCURRENCY),
    keys: new ScaleoutKeys(
      checkName('prefix', options.prefix ?? DEFAULT_KEY_PREFIX),
      checkName('queueName', options.queueName ?? DEFAULT_QUEUE_NAME),
    ),
    cwd: options.cwd,
    lockDurationMs: timeLimit(
      'lockDurationMs',
      options.lockDurationMs,
      DEFAULT_LOCK_DURATION_MS,
      'positive integer',
    ),
    stalledIntervalMs: timeLimit(
      'stalledIntervalMs',
      options.stalledIntervalMs,
      DEFAULT_STALLED_INTERVAL_MS,
      'positive integer',
    ),
    maxStalledCount: positiveInt('maxStalledCount', options.maxStalledCount, DEFAULT_MAX_STALLED_COUNT, 0),
    connectTimeoutMs: timeLimit(
      'connectTimeoutMs',
      options.connectTimeoutMs,
      DEFAULT_CONNECT_TIMEOUT_MS,
      'positive integer',
    ),
  };
}

/** Aborts every run in `running` whose agent's cancel flag is set. */
async function recheckCancels(
  redis: Redis,
  keys: ScaleoutKeys,
  running: ReadonlyMap<string, AbortController>,
): Promise<void> {
  await Promise.all(
    [...running].map(async ([agentId, controller]) => {
      const reason = await redis.get(keys.cancel(agentId)).catch(() => null);
      if (reason !== null) controller.abort(new Error(reason));
    }),
  );
}

/**
 * Tells the supervisor of a failed batch job that each of its agents ended, and why the batch
 * failed: it reads from Redis whether an agent ended or left the batch before, and ends the others
 * with `failure` when the batch job is gone (expired, or removed).
 */
function batchFailed(signals: SignalSender, data: Partial<BatchJobData> | undefined, error: unknown): void {
  const supervisorId = data?.common?.supervisorId;
  if (typeof supervisorId !== 'string' || !Array.isArray(data?.agents)) return;
  const failure = signalFailure(error);
  for (const agent of data.agents) {
    if (typeof agent?.agentId === 'string')
      signals.send(supervisorId, { type: 'ended', agentId: agent.agentId, failure });
  }
}

/** A worker process's job runner. Create with {@link RedisWorker.start}. */
export class RedisWorker extends EventEmitter<RedisWorkerEvents> {
  /** Number of this worker among all workers of the queue (reported as `hostId` in agent events). */
  readonly id: number;
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #pool: BlockingPool;
  #resources: WorkerResources | undefined;
  #secrets: SecretForwarder | undefined;
  readonly #worker: Worker<AgentJobData | BatchJobData, AgentOutcome | null>;
  #queue: Queue | undefined;
  readonly #running: Map<string, AbortController>;
  readonly #presence: { stop(): Promise<void> };
  #closing: Promise<void> | undefined;

  private constructor(
    id: number,
    redis: Redis,
    subscriber: Redis,
    pool: BlockingPool,
    worker: Worker<AgentJobData | BatchJobData, AgentOutcome | null>,
    running: Map<string, AbortController>,
    keys: ScaleoutKeys,
  ) {
    super();
    this.id = id;
    this.#redis = redis;
    this.#subscriber = subscriber;
    this.#pool = pool;
    this.#worker = worker;
    this.#running = running;
    // Counted as connected from now on, so supervisors can tell their agents have somewhere to run.
    this.#presence = announceWorker(redis, keys, id);
  }

  /** Connects, subscribes to cancels and starts taking jobs. */
  static async start(options: RedisWorkerOptions = {}): Promise<RedisWorker> {
    const prepared = prepareWorkerOptions(options);
    const { keys } = prepared;
    const redis = connectRedis(prepared.url, 'troupe-worker');
    // Without listeners, connection error events would crash the process; the clients reconnect.
    redis.on('error', () => {});
    try {
      await waitForRedis(redis, prepared.url, prepared.connectTimeoutMs);
    } catch (error) {
      redis.disconnect();
      throw error;
    }
    const subscriber = redis.duplicate({ enableAutoPipelining: false });
    subscriber.on('error', () => {});
    const id = await redis.incr(keys.workerSequence);
    const pool = new BlockingPool(redis);
    const running = new Map<string, AbortController>();
    const turns = new Map<string, TurnCancels>();
    const journals = new Map<string, RedisJournal>();
    const stops = new Map<string, AbortController>();
    const signals = new SignalSender(redis, keys);
    const secrets = new SecretForwarder(signals);
    const resources = new WorkerResources({
      modules: secrets.moduleLoader(),
      redis,
      pool,
      keys,
      barrier: async (agentId) => {
        await journals.get(agentId)?.flushed();
      },
    });
    const admission = new RedisAdmission(redis, keys);
    // Set once the instance exists (jobs are taken only after that).
    let instance: RedisWorker | undefined;
    // `concurrency` counts agents: BullMQ's counts jobs, so it is kept at the number of jobs
    // running plus the agent slots free (a batch of n agents takes n slots and one job).
    let agents = 0;
    let jobs = 0;
    let bullWorker: Worker | undefined;
    const refillSlots = Math.min(DEFAULT_MAX_BATCH_SIZE, Math.ceil(prepared.concurrency / 2));
    const rebalance = (): void => {
      if (bullWorker) bullWorker.concurrency = Math.max(1, prepared.concurrency - agents + jobs);
    };
    const slots = {
      take: (wanted: number): number => {
        const taken = Math.min(wanted, Math.max(0, prepared.concurrency - agents));
        agents += taken;
        rebalance();
        return taken;
      },
      takeOne: (): void => {
        agents += 1;
        rebalance();
      },
      release: (): void => {
        agents -= 1;
        rebalance();
        // A batch still running keeps BullMQ from fetching (see wakeFetching): once enough
        // slots are free for more work, the worker looks for it.
        if (bullWorker && prepared.concurrency - agents >= refillSlots) wakeFetching(bullWorker);
      },
    };
    const ctx = {
      redis,
      pool,
      keys,
      inbox: new Inbox(redis, keys),
      approvals: new RedisApprovals(redis, keys),
      admission,
      signals,
      resources,
      workerId: id,
      cwd: prepared.cwd,
      promptCache: new Map<string, Promise<string>>(),
      definitions: new SharedDefinitions(),
      running,
      stops,
      turns,
      journals,
      queue: (): Queue => {
        if (!instance) throw new Error('The worker is not started');
        instance.#queue ??= new (bullmq().Queue)(keys.queue, bullQueueOptions(prepared.url, keys.prefix));
        return instance.#queue;
      },
      agentEnded: (agentId: string, status: 'completed' | 'failed'): void => {
        instance?.emit('job:ended', { agentId, status });
      },
      slots,
      secrets,
    };
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === keys.pauseChannel) {
        admission.onAnnouncement(message);
        return;
      }
      if (channel === keys.turnCancelChannel) {
        const session = turns.get(message);
        if (session) applyTurnCancel(redis, keys, message, session).catch(() => {});
        return;
      }
      const controller = running.get(message);
      if (!controller) return;
      redis.get(keys.cancel(message)).then(
        (reason) => controller.abort(new Error(reason ?? 'cancelled')),
        () => controller.abort(new Error('cancelled')),
      );
    });
    await subscriber.subscribe(keys.cancelChannel, keys.pauseChannel, keys.turnCancelChannel);
    // Announcements made while the subscriber was disconnected are lost: once it is subscribed
    // again, every running agent's cancel flag is read (a cancel sets its flag before announcing).
    subscriber.on('ready', () => {
      subscriber.subscribe(keys.cancelChannel, keys.pauseChannel, keys.turnCancelChannel).then(
        () => {
          void recheckCancels(redis, keys, running);
          for (const [agentId, session] of turns)
            applyTurnCancel(redis, keys, agentId, session).catch(() => {});
        },
        () => {
          // Disconnected again: the next 'ready' checks.
        },
      );
    });
    const { Worker } = bullmq();
    const worker = new Worker<AgentJobData | BatchJobData, AgentOutcome | null>(
      keys.queue,
      async (job: Job<AgentJobData | BatchJobData, AgentOutcome | null>, token?: string) => {
        jobs += 1;
        try {
          if (job.name === BATCH_JOB_NAME) return await processBatchJob(ctx, job, token);
          slots.takeOne();
          try {
            return await processAgentJob(ctx, job, token);
          } finally {
            slots.release();
          }
        } finally {
          jobs -= 1;
          rebalance();
        }
      },
      {
        connection: bullConnection(prepared.url),
        prefix: keys.prefix,
        concurrency: prepared.concurrency,
        lockDuration: prepared.lockDurationMs,
        stalledInterval: prepared.stalledIntervalMs,
        maxStalledCount: prepared.maxStalledCount,
        name: `troupe-worker-${id}`,
        autorun: false,
      },
    );
    bullWorker = worker as unknown as Worker;
    const started = new RedisWorker(id, redis, subscriber, pool, worker, running, keys);
    instance = started;
    started.#resources = resources;
    started.#secrets = secrets;
    const ended = (
      job: Job<AgentJobData | BatchJobData, AgentOutcome | null> | undefined,
      status: 'completed' | 'failed',
      error?: Error,
    ): void => {
      if (!job?.id) return;
      expireFinishedJob(redis, keys, job, status);
      if (job.name === BATCH_JOB_NAME) {
        // Its agents said so each as it ended; a batch that failed (its data, or too many worker
        // deaths) ends the ones that had not (a batch job has one attempt: it failed for good).
        if (status === 'failed')
          batchFailed(signals, job.data as Partial<BatchJobData> | undefined, error ?? job.failedReason);
        return;
      }
      const supervisorId = (job.data as Partial<AgentJobData> | undefined)?.supervisorId;
      if (typeof supervisorId === 'string') signals.send(supervisorId, { type: 'ended', agentId: job.id });
      started.emit('job:ended', { agentId: job.id, status });
    };
    worker.on('completed', (job) => ended(job, 'completed'));
    worker.on('failed', (job, error) => ended(job, 'failed', error));
    worker.on('error', (error) => started.emit('error', error));
    // Another worker took the job over (this one stalled past its lock: SIGSTOP, a blocked event
    // loop), or it is gone: its runs stop now, not at their next write, which the lock refuses.
    worker.on('lockRenewalFailed', (jobIds) => {
      for (const jobId of jobIds) {
        stops.get(jobId)?.abort(
          new SystemError('job_lock_lost', 'This worker could not renew the job lock: another holds it', {
            jobId,
          }),
        );
      }
    });
    void worker.run().catch((error: unknown) => started.emit('error', error as Error));
    await worker.waitUntilReady();
    return started;
  }

  /** Agents running in this process right now. */
  get runningAgents(): number {
    return this.#running.size;
  }

  /**
   * Stops taking jobs and lets the running ones finish (or park), then disconnects. With
   * `force`, running agents are left as they are: their locks expire and other workers resume
   * them from their journals. Idempotent.
   */
  close(force = false): Promise<void> {
    this.#closing ??= this.#close(force);
    return this.#closing;
  }

  async #close(force: boolean): Promise<void> {
    await this.#presence.stop();
    await this.#worker.close(force);
    await this.#queue?.close();
    await this.#resources?.close();
    this.#secrets?.close();
    this.#pool.close();
    await closeRedis(this.#subscriber);
    await closeRedis(this.#redis);
  }
}

/**
 * Makes BullMQ's worker look for jobs now. It fetches only while it runs fewer jobs than its
 * concurrency, and otherwise waits for one of its jobs to end: a batch whose agents have mostly
 * ended is one job still running, so without this the slots they freed stayed idle until its last
 * agent ended (a long one, on a worker that runs nothing else). BullMQ's own `resume()` wakes its
 * main loop the same way: a settled promise on the loop's queue ends its wait, and the loop fetches
 * while it is under its concurrency. `mainLoopQueue` is not public API (bullmq is pinned; a
 * version without it leaves this a no-op, and the slots are used again when a job ends).
 */
function wakeFetching(worker: Worker): void {
  const loop = (worker as unknown as { mainLoopQueue?: { add(item: Promise<unknown>): void } | null })
    .mainLoopQueue;
  loop?.add(Promise.resolve(undefined));
}

/**
 * Gives a finished job's hash (its data: the task and context; an agent job's `returnvalue`: the
 * outcome, unmasked) the TTL of its `retainSeconds` (retention.ts `finishedJobTtlMs`). BullMQ
 * removes a job that old only when a later job of the queue finishes (`removeOnComplete: { age }`),
 * so the last jobs of a queue were kept for ever. A failed attempt to be retried is left alone (it
 * must not expire); BullMQ sets `finishedOn` only on a job's last. The events stream, where BullMQ
 * wrote the job's end with its return value, expires as long after the queue's last job end.
 */
function expireFinishedJob(
  redis: Redis,
  keys: ScaleoutKeys,
  job: Job<AgentJobData | BatchJobData, AgentOutcome | null>,
  status: 'completed' | 'failed',
): void {
  // Read as untrusted: a job of another version may hold anything.
  const data = job.data as unknown as
    | { readonly retainSeconds?: unknown; readonly common?: { readonly retainSeconds?: unknown } }
    | undefined;
  const retain = job.name === BATCH_JOB_NAME ? data?.common?.retainSeconds : data?.retainSeconds;
  const final = status === 'completed' || Boolean(job.finishedOn);
  const ttlMs = finishedJobTtlMs(retain, status, final);
  if (ttlMs === undefined || job.id === undefined) return;
  const ignore = (): void => {
    // Redis is gone: BullMQ's own removal by age still applies.
  };
  redis.pexpire(keys.job(job.id), ttlMs).catch(ignore);
  if (typeof retain === 'number') redis.pexpire(keys.events, Math.round(retain * 1000)).catch(ignore);
}
