/**
 * One agent job on a worker: read the journal stream, run (or resume) the loop with a Redis journal,
 * the Redis inbox and shared admission, and hand the outcome to BullMQ as the job's return value.
 *
 * A long `wait_for_instruction` parks the job instead of holding a worker slot: the loop's wait is
 * left pending and dropped (its state is all in the journal), the job moves to BullMQ's delayed
 * set (lock released) and the processor returns. An instruction, a cancel or the wait's limit
 * brings the job back, on any worker, which resumes it from the journal; the resumed wait finds
 * the instruction by its index.
 *
 * Parking never loses an instruction: the worker marks the agent parked, moves the job, then looks
 * for the instruction once more; a sender appends the instruction, then looks for the mark. Redis
 * orders the four steps, so at least one side sees the other and promotes the job.
 */
import { existsSync } from 'node:fs';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { isTroupeError } from '../../errors.ts';
import { type AuditEvent, isTerminal } from '../../journal/events.ts';
import type { AgentChannels, AgentOutcome } from '../../loop/types.ts';
import type { OptionalSignal } from '../../protocol/messages.ts';
import type { AgentJobData, ParkRequest, WorkerSignal } from '../../protocol/redis.ts';
import { MAX_PROVIDER_PAUSE_MS } from '../../providers/constants.ts';
import type { Provider } from '../../providers/types.ts';
import type { ToolTraceContext } from '../../tools/types.ts';
import { runActor } from '../actor/run-actor.ts';
import type { SharedDefinitions } from '../actor/shared-definitions.ts';
import { TurnCancels } from '../actor/turn-cancels.ts';
import type { RedisAdmission } from './admission.ts';
import { clearFinishedAgent, type FinishedRun, readAgentStart, releaseAgent } from './agent-state.ts';
import type { RedisApprovals } from './approvals.ts';
import { markHandedOff } from './batch-hash.ts';
import type { BlockingPool } from './blocking-pool.ts';
import { PARK_WITHOUT_LIMIT_MS } from './constants.ts';
import { askToolSpan, callHostTool } from './host-calls.ts';
import type { Inbox } from './inbox.ts';
import { parseJobData } from './job-data.ts';
import type { ScaleoutKeys } from './keys.ts';
import { bullmq } from './packages.ts';
import { promote } from './promote.ts';
import { batchHashTtlMs } from './retention.ts';
import { RedisRunBudget, runBudgetCancelReason } from './run-budget.ts';
import type { SecretForwarder } from './secret-forwarder.ts';
import type { SignalSender } from './signals.ts';
import { RedisJournal } from './stream-journal.ts';
import { applyTurnCancel } from './turn-cancel.ts';
import type { WorkerResources } from './worker-resources.ts';

/** The per-request signals, sent only when the job's `wantedSignals` names them. */
const OPTIONAL_SIGNALS: ReadonlySet<string> = new Set<OptionalSignal>([
  'round',
  'tool_call',
  'receipt',
  'text',
]);

/** Whether a per-request signal is in `wanted`. */
function wantedIn(wanted: readonly OptionalSignal[]): (kind: OptionalSignal) => boolean {
  const set = new Set<string>(wanted);
  return (kind) => set.has(kind);
}

/**
 * Sends `data`'s signals to its supervisor, leaving out the per-request ones it has no listener
 * for (without listeners they were a quarter of a supervisor's CPU in a fan-out profile, and each
 * one a Redis stream write).
 */
export function signalSender(
  ctx: Pick<JobContext, 'signals'>,
  data: AgentJobData,
): (s: WorkerSignal) => void {
  const wanted = data.wantedSignals === undefined ? undefined : new Set<string>(data.wantedSignals);
  return (s) => {
    if (wanted !== undefined && OPTIONAL_SIGNALS.has(s.type) && !wanted.has(s.type)) return;
    ctx.signals.send(data.supervisorId, s);
  };
}

/** What a worker lends each job it runs. */
export interface JobContext {
  readonly redis: Redis;
  readonly pool: BlockingPool;
  readonly keys: ScaleoutKeys;
  readonly inbox: Inbox;
  readonly approvals: RedisApprovals;
  readonly admission: RedisAdmission;
  readonly signals: SignalSender;
  readonly resources: WorkerResources;
  readonly workerId: number;
  /** The worker's fixed working directory, if it was given one. */
  readonly cwd: string | undefined;
  readonly promptCache: Map<string, Promise<string>>;
  /**
   * One object per distinct definition: each job's data is parsed into new objects, and the
   * loop's per-definition caches (hash, JSON text, compiled rules) are keyed by object.
   */
  readonly definitions: SharedDefinitions;
  /** Runs in progress on this worker, for cancels arriving by pub/sub. */
  readonly running: Map<string, AbortController>;
  /**
   * What stops the runs of each job this worker runs (by job id): aborted when BullMQ could not
   * renew the job's lock (worker.ts), so a worker that lost a job stops its runs at once instead
   * of at their next fenced write (a model request or a tool can take minutes).
   */
  readonly stops: Map<string, AbortController>;
  /** The turn cancels of the sessions among them (turn-cancel.ts). */
  readonly turns: Map<string, TurnCancels>;
  /** Journals of the runs in progress, for the tool barrier. */
  readonly journals: Map<string, RedisJournal>;
  /** The queue agents of a batch are handed off to (jobs of their own), opened on first use. */
  readonly queue: () => Queue;
  /** An agent of a batch job ended on this worker (a job of its own ends as a BullMQ job). */
  readonly agentEnded: (agentId: string, status: 'completed' | 'failed') => void;
  /** The worker's agent slots (`concurrency` counts agents, not jobs: see worker.ts). */
  readonly slots: AgentSlots;
  /** Sends the credentials registered here to the supervisors of the runs (secret-forwarder.ts). */
  readonly secrets: SecretForwarder;
}

/** A worker's `concurrency`, counted in agents. */
export interface AgentSlots {
  /** Takes up to `wanted` free slots (none when none is free); returns how many. */
  take(wanted: number): number;
  /** Takes one slot, free or not (a job of one agent taken runs). */
  takeOne(): void;
  /** Gives back one slot. */
  release(): void;
}

/**
 * `parse()`'s job data, or BullMQ's UnrecoverableError with its message: data this worker cannot
 * run fails its job at once, without the retries a failed run gets.
 */
export function parsedOrUnrecoverable<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const { UnrecoverableError } = bullmq();
    throw new UnrecoverableError(error instanceof Error ? error.message : String(error));
  }
}

/** Runs `job`; resolves with the outcome, or throws DelayedError once the job is parked. */
export async function processAgentJob(
  ctx: JobContext,
  job: Job,
  token: string | undefined,
): Promise<AgentOutcome> {
  const data = parsedOrUnrecoverable(() => parseJobData(job.data, job.id));
  const agentId = data.agent.agentId;
  const stop = new AbortController();
  ctx.stops.set(agentId, stop);
  try {
    const fence = token === undefined ? undefined : { key: ctx.keys.jobLock(agentId), token };
    const ended = await runAgent(
      ctx,
      data,
      fence,
      (journal, request) =>
        parkRun(ctx, data, journal, request, async () => {
          await job.moveToDelayed(request.deadline ?? Date.now() + PARK_WITHOUT_LIMIT_MS, token);
          return job;
        }),
      stop.signal,
    );
    if (ended === undefined) {
      const { DelayedError } = bullmq();
      throw new DelayedError();
    }
    const { batchId } = data;
    let handedOff: Promise<unknown> | undefined;
    if (batchId !== undefined) {
      // Only into a hash that exists: one its supervisor deleted (it read every agent) or that
      // expired is not made again with this field alone (batch-hash.ts).
      const ttlMs = batchHashTtlMs(data.retainSeconds) ?? 0;
      handedOff = markHandedOff(ctx.redis, ctx.keys.batch(batchId), agentId, ttlMs);
    }
    await finish(ctx, data, ended, handedOff);
    return ended.outcome;
  } catch (error) {
    if (error instanceof bullmq().DelayedError || !isTroupeError(error)) throw error;
    // BullMQ keeps only a message: carry the code in it.
    throw new Error(`${error.code}: ${error.message}`);
  } finally {
    if (ctx.stops.get(agentId) === stop) ctx.stops.delete(agentId);
  }
}

/** The lock a run's journal appends are fenced with: its job's (an agent's, or its batch's). */
export interface Fence {
  readonly key: string;
  readonly token: string;
}

/** How a run ended: its outcome, and what {@link finish} needs to know of it. */
export interface RunEnded {
  readonly outcome: AgentOutcome;
  /** The agent's park mark was there when the run started (agent-state.ts `FinishedRun`). */
  readonly parkMarkSeen: boolean;
}

/**
 * Runs (or resumes) the agent of `data` from its journal, the journal fenced by `fence`. Resolves
 * with its outcome once the outcome's events are in Redis, or with undefined once the run parked
 * (`park` resolved: the run is dropped, its state is all in the journal). Throws when the run
 * itself failed (a lost journal write), not for the agent's own failures. `stop` aborts the run
 * with its reason (its batch job's lock was lost: the run's journal appends are refused already).
 */
export function runAgent(
  ctx: JobContext,
  data: AgentJobData,
  fence: Fence | undefined,
  onPark: (journal: RedisJournal, request: ParkRequest) => Promise<void>,
  stop?: AbortSignal,
): Promise<RunEnded | undefined> {
  // What the run registers for masking (its provider's key, its tools' and MCP servers' tokens)
  // is sent to its supervisor only, not to the others this worker serves.
  return ctx.secrets.within(data, () => runAgentAs(ctx, data, fence, onPark, stop));
}

/** {@link runAgent}; `stop` aborts the run with its reason (its batch's lock was lost). */
async function runAgentAs(
  ctx: JobContext,
  data: AgentJobData,
  fence: Fence | undefined,
  onPark: (journal: RedisJournal, request: ParkRequest) => Promise<void>,
  stop: AbortSignal | undefined,
): Promise<RunEnded | undefined> {
  const agentId = data.agent.agentId;
  const { redis, keys } = ctx;
  const controller = new AbortController();
  const stopRun = (): void => controller.abort(stop?.reason);
  if (stop?.aborted) stopRun();
  else stop?.addEventListener('abort', stopRun, { once: true });
  const signal = signalSender(ctx, data);
  // Registered before the cancel flag is read: a cancel announced from now on aborts the run
  // (worker.ts), and one announced earlier set its flag first, so the read below sees it.
  ctx.running.set(agentId, controller);
  const turns = data.agent.session === true ? new TurnCancels() : undefined;
  if (turns !== undefined) ctx.turns.set(agentId, turns);
  let journal: RedisJournal | undefined;
  let finished = false;
  // Before the run's outcome can be reported: the supervisor masks it with what this worker knows.
  ctx.secrets.started(data);
  try {
    const { cancelReason, parkedText, events } = await readAgentStart(redis, keys, agentId, fence?.key);
    if (cancelReason !== null) controller.abort(new Error(cancelReason));
    const resumed = events.length > 0;
    // A non-empty journal without a park mark means the last worker died (or the run failed);
    // one that ended is an agent spawned again (`troupe resume`): it returns its outcome.
    const ended = events.length > 0 && isTerminal(events[events.length - 1] as AuditEvent);
    const restart =
      resumed && parkedText === null && !ended ? await redis.hincrby(keys.meta(agentId), 'restarts', 1) : 0;
    signal({ type: 'started', agentId, workerId: ctx.workerId, resumed, restart });

    const runJournal = new RedisJournal({
      redis,
      key: keys.journal(agentId),
      events,
      ...(fence === undefined ? {} : { fence }),
      onFailure: (error) => controller.abort(error),
    });
    journal = runJournal;
    ctx.journals.set(agentId, runJournal);
    let park: (request: ParkRequest) => void = () => {};
    const parked = new Promise<ParkRequest>((resolve) => {
      park = resolve;
    });
    const budget =
      data.runBudget === undefined
        ? undefined
        : new RedisRunBudget(redis, keys.runBudget(data.supervisorId), data.runBudget, agentId);
    // On the connection before any receipt of the run is counted (run-budget.ts).
    budget?.begin().catch(() => {
      // Redis is gone: the supervisor still counts the receipts and cancels at the budget.
    });
    const [provider, registry] = await Promise.all([
      providerFor(ctx, data, budget, controller),
      ctx.resources.registry(data),
    ]);
    const run = runActor(
      { ...data.agent, definition: ctx.definitions.of(data.agent.definition) },
      {
        provider,
        registry,
        cwd: ctx.cwd ?? (existsSync(data.cwd) ? data.cwd : process.cwd()),
        mcp: ctx.resources.mcp(),
        journal: runJournal,
        ...(resumed ? { resumeFrom: events } : {}),
        signal: controller.signal,
        channels: channels(ctx, data, park, turns),
        // A traced agent's tool runs under its call's execute_tool span, which the supervisor makes.
        ...(data.agent.trace === undefined ? {} : { toolSpan: toolSpanOf(ctx, data) }),
        // The events a signal reports are on the connection before it (the journal batches per turn).
        onSignal: (s) => {
          runJournal.commit();
          // Before the agent can ask for its next request (run-budget.ts).
          if (budget !== undefined && s.type === 'receipt') {
            budget.count(s.inputTokens + s.outputTokens, s.costUsd).catch(() => {
              // Redis is gone: the supervisor still counts the receipt and cancels at the budget.
            });
          }
          signal(s);
        },
        // Not built at all when the supervisor does not listen (signalSender would drop them).
        ...(data.wantedSignals === undefined
          ? {}
          : {
              wantsSignal: wantedIn(
                budget === undefined ? data.wantedSignals : [...data.wantedSignals, 'receipt'],
              ),
            }),
        promptCache: ctx.promptCache,
      },
    );
    const first = await Promise.race([
      run.then((outcome) => ({ outcome })),
      parked.then((request) => ({ park: request })),
    ]);
    if ('park' in first) {
      await onPark(runJournal, first.park);
      return undefined;
    }
    await runJournal.flushed();
    finished = true;
    return { outcome: first.outcome, parkMarkSeen: parkedText !== null };
  } finally {
    stop?.removeEventListener('abort', stopRun);
    ctx.secrets.ended(data);
    if (ctx.running.get(agentId) === controller) ctx.running.delete(agentId);
    if (turns !== undefined && ctx.turns.get(agentId) === turns) ctx.turns.delete(agentId);
    if (journal !== undefined && ctx.journals.get(agentId) === journal) ctx.journals.delete(agentId);
    // A run that parked or failed gives its claim up: the agent's next job must not wait for the
    // rest of this one (a batch's lock lives on). A finished agent's claim is left to lapse with
    // the lock: one command less per agent, and a later spawn of it at most waits for the batch.
    if (fence !== undefined && !finished) releaseAgent(redis, keys, agentId, fence.key).catch(() => {});
  }
}

/**
 * Asks the supervisor for the trace context of a tool call's `execute_tool` span (runActor asks
 * only when a context manager here can carry it, or the tool reads `ctx.traceContext`). A host
 * tool runs on the supervisor, under its span already. Once the supervisor let one ask go
 * unanswered (an earlier version drops them), the run's later tools do not wait for it again, and
 * get the agent's span instead.
 */
function toolSpanOf(
  ctx: JobContext,
  data: AgentJobData,
): (name: string, callId: string, at: number) => Promise<ToolTraceContext | undefined> {
  const agentId = data.agent.agentId;
  const agentSpan =
    data.agent.trace === undefined ? undefined : { traceparent: data.agent.trace.traceparent };
  let answers = true;
  return async (name, callId, at) => {
    if (data.hostTools.some((tool) => tool.name === name)) return undefined;
    if (!answers) return agentSpan;
    const span = await askToolSpan(ctx.redis, ctx.pool, ctx.keys, data.supervisorId, {
      agentId,
      name,
      callId,
      at,
    });
    if (span === null) {
      answers = false;
      return agentSpan;
    }
    return span;
  };
}

async function providerFor(
  ctx: JobContext,
  data: AgentJobData,
  budget: RedisRunBudget | undefined,
  controller: AbortController,
): Promise<Provider> {
  const key = data.agent.provider;
  const agentId = data.agent.agentId;
  const send = (s: WorkerSignal): void => ctx.signals.send(data.supervisorId, s);
  const provider = await ctx.resources.provider(data.provider, {
    admission: {
      acquire: async (ticket, signal) => {
        const spent = await budget?.spent();
        if (spent !== undefined) {
          // Ends the agent as the supervisor's cancel would, without waiting for it.
          controller.abort(new Error(runBudgetCancelReason(spent)));
          throw controller.signal.reason;
        }
        return ctx.admission.acquire(
          {
            providerKey: key,
            limits: data.limits,
            estimatedTokens: ticket.estimatedInputTokens,
            onPaused: (waitMs) =>
              send({ type: 'paused', agentId, workerId: ctx.workerId, provider: key, waitMs }),
          },
          signal,
        );
      },
    },
    onRateLimited: (askedMs) => {
      if (askedMs === undefined || askedMs <= 0) return;
      const retryAfterMs = Math.min(askedMs, MAX_PROVIDER_PAUSE_MS);
      ctx.admission.pause(key, retryAfterMs).then(
        (extended) => {
          if (extended) send({ type: 'backoff', agentId, provider: key, retryAfterMs });
        },
        () => {
          // The provider still backs off by itself; only the shared pause is lost.
        },
      );
    },
  });
  // No cancel check per provider turn: the worker aborts the run on the cancel announcement, and
  // reads every running agent's flag again whenever its subscription comes back (worker.ts), which
  // also reaches a run in the middle of a turn.
  return provider;
}

function channels(
  ctx: JobContext,
  data: AgentJobData,
  park: (request: ParkRequest) => void,
  turns: TurnCancels | undefined,
): AgentChannels {
  const agentId = data.agent.agentId;
  const parkedKey = ctx.keys.parked(agentId);
  return {
    // A session's turn: a cancel stored before it started (or while no subscription heard it) applies.
    ...(turns === undefined
      ? {}
      : {
          turnSignal: (turn: number) => {
            const signal = turns.signal(turn);
            applyTurnCancel(ctx.redis, ctx.keys, agentId, turns).catch(() => {});
            return signal;
          },
        }),
    // The loop already checked the result against the output schema; it travels in the outcome.
    completeTask: async () => ({ accepted: true }),
    hostToolOutcome: (name, callId, signal) =>
      data.hostTools.some((tool) => tool.name === name)
        ? callHostTool(
            ctx.redis,
            ctx.pool,
            ctx.keys,
            data.supervisorId,
            { agentId, name, args: {}, callId, resume: true },
            signal,
            { beats: data.supervisorBeats === true },
          )
        : undefined,
    waitForInstruction: async (index, timeoutMs, signal) => {
      if (signal.aborted) return null;
      const [mark, ready] = await Promise.all([ctx.redis.get(parkedKey), ctx.inbox.ask(agentId, index)]);
      const done = async <T>(value: T): Promise<T> => {
        if (mark !== null) await ctx.redis.del(parkedKey);
        return value;
      };
      if (ready !== undefined) return done(ready);
      const earlier = parseParked(mark);
      // A wait resumed after a timed park keeps the deadline it had.
      const deadline =
        earlier?.index === index && earlier.deadline !== null
          ? earlier.deadline
          : timeoutMs === undefined
            ? null
            : Date.now() + timeoutMs;
      const remaining = (): number => (deadline === null ? Number.POSITIVE_INFINITY : deadline - Date.now());
      if (remaining() <= 0) return done(null);
      const blockMs = Math.min(remaining(), data.parkAfterMs);
      if (blockMs > 0) {
        const text = await ctx.inbox.wait(ctx.pool, agentId, index, blockMs, signal);
        if (text !== null) return done(text);
        if (signal.aborted) return null;
        if (remaining() <= 0) return done(null);
      }
      park({ index, deadline });
      // Never settles: the job is parked and this run is dropped; a later run resumes the wait.
      return new Promise<string | null>(() => {});
    },
    // The loop enforces the request's deadline (it aborts `signal`); a parked job wakes at it.
    requestApproval: async (request, signal) => {
      if (signal.aborted) return null;
      const { requestId } = request;
      const mark = await ctx.redis.get(parkedKey);
      const done = async <T>(value: T): Promise<T> => {
        if (mark !== null) await ctx.redis.del(parkedKey);
        return value;
      };
      const earlier = await ctx.approvals.decision(agentId, requestId);
      if (earlier !== undefined) return done(earlier);
      // Known to every decider (`troupe approve`), and to the supervisor that spawned the agent.
      await ctx.approvals.request(request);
      ctx.signals.send(data.supervisorId, { type: 'approval', agentId, request });
      const remaining = (): number =>
        request.deadline === null ? Number.POSITIVE_INFINITY : request.deadline - Date.now();
      const blockMs = Math.min(remaining(), data.parkAfterMs);
      if (blockMs > 0) {
        const decision = await ctx.approvals.wait(ctx.pool, agentId, requestId, blockMs, signal);
        if (decision !== undefined) return done(decision);
        if (signal.aborted) return null;
      }
      if (remaining() <= 0) {
        await done(null);
        return null;
      }
      park({ index: -1, requestId, deadline: request.deadline });
      // Never settles: the job is parked; the resumed run waits again under the same request id.
      return new Promise<null>(() => {});
    },
  };
}

/**
 * Parks a run: its Waiting event flushed, the agent marked parked, `move` puts the job that resumes
 * it in BullMQ's delayed set (this job, or a job of its own for an agent of a batch); then the
 * instruction (or decision, or cancel) is looked for once more, and the job woken if it came.
 */
export async function parkRun(
  ctx: JobContext,
  data: AgentJobData,
  journal: RedisJournal,
  request: ParkRequest,
  move: () => Promise<Job>,
): Promise<void> {
  const agentId = data.agent.agentId;
  // The Waiting event must be in the journal before the job leaves this worker.
  await journal.flushed();
  await ctx.redis.set(ctx.keys.parked(agentId), JSON.stringify(request));
  const job = await move();
  ctx.signals.send(data.supervisorId, {
    type: 'parked',
    agentId,
    workerId: ctx.workerId,
    index: request.index,
  });
  const [ready, cancelled] = await Promise.all([
    request.requestId === undefined
      ? ctx.inbox.get(agentId, request.index)
      : ctx.approvals.decision(agentId, request.requestId),
    ctx.redis.exists(ctx.keys.cancel(agentId)),
  ]);
  if (ready !== undefined || cancelled > 0) await promote(job);
}

/**
 * Clears what the agent's finished run left (its park mark when `run` saw one, its undecided
 * approval requests) and sets the retention of its keys (agent-state.ts); `more` is the caller's
 * commands issued in this turn, sent in the same write and waited for too.
 */
export async function finish(
  ctx: JobContext,
  data: AgentJobData,
  run: Pick<FinishedRun, 'parkMarkSeen'>,
  more?: Promise<unknown>,
): Promise<void> {
  await clearFinishedAgent(
    ctx.redis,
    ctx.keys,
    ctx.approvals,
    data.agent.agentId,
    { parkMarkSeen: run.parkMarkSeen, retainSeconds: data.retainSeconds },
    more,
  );
}

function parseParked(text: string | null): ParkRequest | undefined {
  if (text === null) return undefined;
  try {
    const value = JSON.parse(text) as Partial<ParkRequest>;
    if (typeof value.index === 'number' && (value.deadline === null || typeof value.deadline === 'number')) {
      return {
        index: value.index,
        deadline: value.deadline,
        ...(typeof value.requestId === 'string' ? { requestId: value.requestId } : {}),
      };
    }
  } catch {
    // A mark this worker cannot read is treated as absent.
  }
  return undefined;
}
