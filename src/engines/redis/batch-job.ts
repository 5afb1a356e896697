/**
 * A batch job on a worker: the agents one supervisor ran in one event-loop turn, run at once under
 * the batch job's lock. One BullMQ job per batch instead of one per agent: BullMQ's add, fetch and
 * finish scripts (and their round trips and JS on every side) are paid once per batch.
 *
 * Each agent keeps what a job of its own gives it:
 * - **Journal and fence.** Every agent's journal appends, and every write of the batch's hash, are
 *   fenced with the batch job's lock (`<job>:lock` and this worker's token): a worker that lost the
 *   batch (it stalled past the lock duration) writes no agent's journal and no field or TTL of the
 *   hash, which its supervisor may have deleted or another worker now writes. A refused write
 *   stops the batch on this worker: its running agents are aborted, none is handed off.
 * - **What became of each agent** is in the batch's hash (keys.ts `batch`), written in the round
 *   trip that ends the agent's run: its outcome (which the supervisor reads when told it ended),
 *   `h` when it was handed off to a job of its own, or the reason its run failed. A worker that
 *   takes the batch over after its worker died runs only the agents with no field: finished
 *   agents are not run again, and their outcomes stay where the supervisor reads them.
 * - **Parking.** An agent whose wait parks does not hold the batch: it is handed off to a job of
 *   its own (job id = agent id, BullMQ's delayed set), exactly where a parked agent of a job of
 *   its own would be, so instructions, cancels and decisions (`troupe approve`) find and wake it
 *   by agent id. The order that keeps an instruction from being lost is the same (agent-job.ts
 *   `parkRun`): mark parked, add the job, look for the instruction once more.
 * - **Retries.** A run that fails (a lost journal write) is handed off to a job of its own with the
 *   supervisor's remaining attempts and back-off; the batch and its other agents go on.
 *
 * The handed-off job is added before the agent's `h` field is set: a worker that dies between the
 * two leaves a job whose agent has no field, which the worker that takes the batch over finds by
 * its id and does not run again.
 */
import type { Job } from 'bullmq';
import { isTroupeError, SystemError, serializeError } from '../../errors.ts';
import type { AgentJobData, BatchJobData, BatchResult, ParkRequest } from '../../protocol/redis.ts';
import {
  type Fence,
  finish,
  type JobContext,
  parkRun,
  parsedOrUnrecoverable,
  runAgent,
} from './agent-job.ts';
import { endBatchFenced, writeBatchFenced } from './batch-hash.ts';
import { AGENT_JOB_NAME, BATCH_STATE_PAGE, HANDED_OFF, PARK_WITHOUT_LIMIT_MS } from './constants.ts';
import { parseBatchJobData } from './job-data.ts';
import { bullmq } from './packages.ts';
import { batchHashTtlMs, jobRemoval } from './retention.ts';
import { LuaScript } from './script.ts';
import { signalFailure } from './signals.ts';
import type { RedisJournal } from './stream-journal.ts';

/** Runs every agent of batch `job` that has not ended or left it yet; resolves when each has. */
export async function processBatchJob(ctx: JobContext, job: Job, token: string | undefined): Promise<null> {
  const { batch, agents } = parsedOrUnrecoverable(() => parseBatchJobData(job.data, job.id));
  const batchId = job.id ?? '';
  const { redis, keys } = ctx;
  const batchKey = keys.batch(batchId);
  const fence = token === undefined ? undefined : { key: keys.jobLock(batchId), token };
  const states = await batchStates(ctx, batchKey, agents);
  let todo: AgentJobData[] = [];
  for (const [index, data] of agents.entries()) {
    const { agentId } = data.agent;
    const state = states[index];
    if (state === AgentState.Running) todo.push(data);
    else if (state === AgentState.Ended) {
      // Ended before the worker that ran it died: its end signal may never have left.
      ctx.signals.send(batch.common.supervisorId, { type: 'ended', agentId });
    }
  }
  if (job.attemptsStarted > 1 && todo.length > 0) {
    // Taken over: an agent whose worker died between adding its own job and saying so is that
    // job's now.
    const pipeline = redis.pipeline();
    for (const data of todo) pipeline.exists(keys.job(data.agent.agentId));
    const replies = (await pipeline.exec()) ?? [];
    const left = todo.filter((_, index) => replies[index]?.[1] === 1);
    if (left.length > 0) {
      const marks = Object.fromEntries(left.map((data) => [data.agent.agentId, HANDED_OFF]));
      if (!(await writeBatchFenced(redis, batchKey, fence, marks))) throw lockLost(batchId);
      todo = todo.filter((_, index) => replies[index]?.[1] !== 1);
    }
  }
  const at: BatchRun = { id: batchId, key: batchKey, fence, retry: batch.retry, stop: new AbortController() };
  ctx.stops.set(batchId, at.stop);
  try {
    return await runBatch(ctx, job, token, at, todo, batch.common.retainSeconds);
  } finally {
    if (ctx.stops.get(batchId) === at.stop) ctx.stops.delete(batchId);
  }
}

/** Runs the agents `todo` of batch `job` (see {@link processBatchJob}), then ends the batch. */
async function runBatch(
  ctx: JobContext,
  job: Job,
  token: string | undefined,
  at: BatchRun,
  todo: readonly AgentJobData[],
  retainSeconds: number | undefined,
): Promise<null> {
  // The worker runs as many as it has slots for. With none free (it took more jobs than it has
  // room for: BullMQ fetches before it knows a job's size), the batch goes back to the queue for
  // any worker with room; with some, the agents it has no room for go to jobs of their own.
  const room = todo.length === 0 ? 0 : ctx.slots.take(todo.length);
  if (room === 0 && todo.length > 0) {
    await job.moveToWait(token);
    throw new (bullmq().WaitingError)();
  }
  const excess = todo.slice(room);
  await Promise.all([
    ...todo.slice(0, room).map((data) => runBatchAgent(ctx, at, data).finally(() => ctx.slots.release())),
    excess.length === 0 ? undefined : handOffWaiting(ctx, at, excess),
  ]);
  // Stopped: its job is another worker's now (or gone), which BullMQ would refuse to finish.
  if (at.stop.signal.aborted) throw at.stop.signal.reason;
  // Also set by the supervisor once it settled every agent: a batch that fails never gets here.
  const ttlMs = batchHashTtlMs(retainSeconds);
  if (ttlMs === undefined) return null;
  const end = await endBatchFenced(ctx.redis, at.key, at.fence, ttlMs, retainSeconds === 0);
  if (end === 'lost') throw lockLost(at.id);
  // Its supervisor read every agent, and could not remove the job this worker held: the job goes
  // in BullMQ's script that completes it (which reads the options of this Job object), as the
  // supervisor would have removed it. Its hash went in the script above.
  if (end === 'removed') job.opts.removeOnComplete = true;
  return null;
}

/** The error a batch whose lock this worker lost stops with. */
function lockLost(batchId: string): SystemError {
  return new SystemError('job_lock_lost', 'This worker no longer holds the batch job lock', { batchId });
}

/**
 * Stops the batch `at` on this worker once it finds it lost the batch's lock (a fenced write was
 * refused): every agent still running in it is aborted (their journal appends are refused too, so
 * nothing of what they did after is kept), and none writes into the batch's hash or is handed off.
 * The worker holding the batch now runs them from their journals; a batch that nobody holds goes
 * back to the queue when BullMQ finds it stalled.
 */
function stopBatch(at: BatchRun): void {
  if (!at.stop.signal.aborted) at.stop.abort(lockLost(at.id));
}

/** Whether `error` is the fence refusing a write of a batch whose lock this worker lost. */
function isLockLost(error: unknown): boolean {
  return isTroupeError(error) && (error.code === 'job_lock_lost' || error.code === 'journal_fenced');
}

/**
 * What a batch's hash says of one of its agents (see {@link batchStates}): `Running`, no field (not
 * ended nor handed off yet).
 */
const AgentState = { Running: 0, HandedOff: 1, Ended: 2 } as const;
type AgentState = (typeof AgentState)[keyof typeof AgentState];

// KEYS: the batch's hash. ARGV: agent ids. Returns an AgentState per agent: whether its field is
// there and whether it is HANDED_OFF, never its value (an outcome each: HGETALL sent them all).
const STATES = new LuaScript(
  `local states = {}
for i, field in ipairs(ARGV) do
  local size = redis.call('HSTRLEN', KEYS[1], field)
  if size == 0 then
    states[i] = ${AgentState.Running}
  elseif size == ${HANDED_OFF.length} and redis.call('HGET', KEYS[1], field) == '${HANDED_OFF}' then
    states[i] = ${AgentState.HandedOff}
  else
    states[i] = ${AgentState.Ended}
  end
end
return states`,
  1,
);

/**
 * What the batch's hash says of each of `agents`, in their order: read a page of
 * BATCH_STATE_PAGE agents per round trip, each an integer, whatever their outcomes hold.
 */
async function batchStates(
  ctx: JobContext,
  batchKey: string,
  agents: readonly AgentJobData[],
): Promise<AgentState[]> {
  const states: AgentState[] = [];
  for (let start = 0; start < agents.length; start += BATCH_STATE_PAGE) {
    const ids = agents.slice(start, start + BATCH_STATE_PAGE).map((data) => data.agent.agentId);
    states.push(...((await STATES.run(ctx.redis, [batchKey], ids)) as AgentState[]));
  }
  return states;
}

/**
 * The batch job a worker runs: its id, hash, lock, the retry options of its agents, and what
 * stops it ({@link stopBatch}).
 */
interface BatchRun {
  readonly id: string;
  readonly key: string;
  readonly fence: Fence | undefined;
  readonly retry: BatchJobData['retry'];
  readonly stop: AbortController;
}

/**
 * Runs one agent of a batch to its end, its hand-off, or its run's failure. Never throws. A write
 * the batch's lock refuses stops the batch ({@link stopBatch}).
 */
async function runBatchAgent(ctx: JobContext, at: BatchRun, data: AgentJobData): Promise<void> {
  const agentId = data.agent.agentId;
  try {
    const ended = await runAgent(
      ctx,
      data,
      at.fence,
      (journal, request) => handOff(ctx, at, at.retry.attempts, data, { journal, request }),
      at.stop.signal,
    );
    if (ended === undefined) return;
    const { outcome } = ended;
    const result: BatchResult = { outcome };
    const written = writeBatchFenced(ctx.redis, at.key, at.fence, { [agentId]: JSON.stringify(result) });
    // The agent's keys are cleared whoever holds the batch now: its end is in its journal, which
    // took the append under the lock.
    await finish(ctx, data, ended, written);
    if (!(await written)) throw lockLost(at.id);
    // Stored first: a supervisor that misses this signal reads the outcome from the batch.
    ctx.signals.send(data.supervisorId, { type: 'ended', agentId, outcome });
    ctx.agentEnded(agentId, 'completed');
  } catch (error) {
    if (at.stop.signal.aborted || isLockLost(error)) {
      // The worker that holds the batch now (or takes it from the queue) runs the agent.
      stopBatch(at);
      return;
    }
    // The run failed (not the agent): retried in a job of its own, as a job of its own would be.
    try {
      if (at.retry.attempts > 1) {
        await handOff(ctx, at, at.retry.attempts - 1, data, undefined);
        return;
      }
      const reason = serializeError(error);
      const result: BatchResult = { failed: `${reason.code}: ${reason.message}` };
      const failed = { [agentId]: JSON.stringify(result) };
      if (!(await writeBatchFenced(ctx.redis, at.key, at.fence, failed))) throw lockLost(at.id);
      // Where the run failed is unknown: the park mark is deleted whether it was there or not.
      await finish(ctx, data, { parkMarkSeen: true });
      // With the reason: the batch's hash may be gone (expired) when it is read.
      ctx.signals.send(data.supervisorId, { type: 'ended', agentId, failure: signalFailure(error) });
      ctx.agentEnded(agentId, 'failed');
    } catch (failure) {
      // This worker lost the batch (or Redis): the worker that takes it over runs the agent.
      if (isLockLost(failure)) stopBatch(at);
    }
  }
}

/** Throws unless this worker still holds the batch's lock. */
async function holdLock(ctx: JobContext, at: BatchRun): Promise<void> {
  if (at.stop.signal.aborted) throw at.stop.signal.reason;
  if (at.fence === undefined) return;
  if ((await ctx.redis.get(at.fence.key)) !== at.fence.token) throw lockLost(at.id);
}

/** Moves agents this worker has no room for out of their batch into jobs of their own, due now. */
async function handOffWaiting(ctx: JobContext, at: BatchRun, agents: readonly AgentJobData[]): Promise<void> {
  try {
    await holdLock(ctx, at);
    await ctx.queue().addBulk(
      agents.map((data) => ({
        name: AGENT_JOB_NAME,
        data: { ...data, batchId: at.id },
        opts: ownJobOptions(data, at.retry.attempts, at.retry.backoffMs, 0),
      })),
    );
    const marks = Object.fromEntries(agents.map((data) => [data.agent.agentId, HANDED_OFF]));
    if (!(await writeBatchFenced(ctx.redis, at.key, at.fence, marks))) throw lockLost(at.id);
  } catch (error) {
    // This worker lost the batch (or Redis): the worker that takes it over finds their jobs.
    if (isLockLost(error)) stopBatch(at);
  }
}

/** BullMQ options of the job of an agent's own that a batch hands it off to. */
function ownJobOptions(data: AgentJobData, attempts: number, backoffMs: number, delayMs: number) {
  return {
    jobId: data.agent.agentId,
    delay: Math.max(0, delayMs),
    attempts,
    backoff: { type: 'exponential', delay: backoffMs },
    ...jobRemoval(data.retainSeconds),
  };
}

/**
 * Moves an agent out of its batch into a job of its own with `attempts`: parked until
 * `parked.request`'s deadline, or, after a failed run, due after the retry back-off.
 */
async function handOff(
  ctx: JobContext,
  at: BatchRun,
  attempts: number,
  data: AgentJobData,
  parked: { readonly journal: RedisJournal; readonly request: ParkRequest } | undefined,
): Promise<void> {
  const agentId = data.agent.agentId;
  const add = async (delayMs: number): Promise<Job> => {
    // Narrows the window in which a worker that lost the batch adds the job (its journal appends
    // are refused by the fence already). One added all the same is found by a worker that takes
    // the batch over after it (processBatchJob), which marks the agent itself.
    await holdLock(ctx, at);
    const options = ownJobOptions(data, attempts, at.retry.backoffMs, delayMs);
    const job = await ctx.queue().add(AGENT_JOB_NAME, { ...data, batchId: at.id }, options);
    if (!(await writeBatchFenced(ctx.redis, at.key, at.fence, { [agentId]: HANDED_OFF }))) {
      throw lockLost(at.id);
    }
    return job;
  };
  if (parked === undefined) {
    await add(at.retry.backoffMs);
    return;
  }
  const { journal, request } = parked;
  await parkRun(ctx, data, journal, request, () =>
    add((request.deadline ?? Date.now() + PARK_WITHOUT_LIMIT_MS) - Date.now()),
  );
}
