/**
 * What a worker reads of an agent's keys when it takes the agent's job, and what it clears when the
 * job finishes, with as few Redis commands as the guarantees allow: every command costs the worker
 * an encode, a reply parse and a promise, and the server a call (bench/RESULTS.md, cmds26).
 */
import type { Redis } from 'ioredis';
import type { AuditEvent } from '../../journal/events.ts';
import type { RedisApprovals } from './approvals.ts';
import { retainJournal } from './journal-registry.ts';
import type { ScaleoutKeys } from './keys.ts';
import { readRedisJournal } from './stream-journal.ts';

/** An agent's state as a worker finds it when it takes the job. */
export interface AgentStart {
  /** The cancel flag's reason, when the agent was cancelled. */
  readonly cancelReason: string | null;
  /** The park mark (JSON), when the agent's job was parked. */
  readonly parkedText: string | null;
  /** The journal's events ([] for a new agent). */
  readonly events: AuditEvent[];
}

/**
 * Reads the cancel flag and the park mark (one MGET) and the journal, on one round trip. With
 * `claim` (the run's job lock key), first claims the agent for that job ({@link claimAgent}) on
 * the same round trip; when another job's run holds it, waits for it, then reads again.
 */
export async function readAgentStart(
  redis: Redis,
  keys: ScaleoutKeys,
  agentId: string,
  claim?: string,
): Promise<AgentStart> {
  if (claim === undefined) {
    const [[cancelReason = null, parkedText = null], events] = await Promise.all([
      redis.mget(keys.cancel(agentId), keys.parked(agentId)),
      readRedisJournal(redis, keys.journal(agentId)),
    ]);
    return { cancelReason, parkedText, events };
  }
  // The claim and the two reads are one script: as many commands as the plain MGET.
  const [[claimed, cancelReason = null, parkedText = null], events] = await Promise.all([
    redis.eval(
      START_SCRIPT,
      3,
      keys.runner(agentId),
      keys.cancel(agentId),
      keys.parked(agentId),
      claim,
    ) as Promise<[number, string | null, string | null]>,
    readRedisJournal(redis, keys.journal(agentId)),
  ]);
  if (claimed === 1) return { cancelReason, parkedText, events };
  await claimAgent(redis, keys, agentId, claim);
  return readAgentStart(redis, keys, agentId);
}

// The runner is the lock key of the job running the agent. Another job's live lock means another
// worker runs the agent now (a supervisor re-submitted it while its first run goes on): wait.
const CLAIM_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] and redis.call('EXISTS', current) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1`;

/** {@link CLAIM_SCRIPT}, then the cancel flag and the park mark (KEYS[2], KEYS[3]) when claimed. */
const START_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] and redis.call('EXISTS', current) == 1 then return {0} end
redis.call('SET', KEYS[1], ARGV[1])
return {1, redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3])}`;

const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** How often a run waiting for another job's run of the same agent looks again. */
export const CLAIM_POLL_MS = 200;

/**
 * Makes the job whose lock is `lockKey` the one running `agentId`, first waiting while another
 * job's run of it goes on (its lock held): two runs of one agent would append to one journal, the
 * loser's append be refused and its retry resume a third run, each running its model requests and
 * tool calls again and recording calls still running elsewhere as interrupted. A run that ends
 * gives its claim up ({@link releaseAgent}); a dead worker's expires with its job lock.
 */
export async function claimAgent(
  redis: Redis,
  keys: ScaleoutKeys,
  agentId: string,
  lockKey: string,
): Promise<void> {
  // A cancel ends the other run too (the flag is the agent's): it still waits for it.
  while ((await redis.eval(CLAIM_SCRIPT, 1, keys.runner(agentId), lockKey)) !== 1) {
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
  }
}

/** Gives up the claim of {@link claimAgent} when it is still this job's. */
export async function releaseAgent(
  redis: Redis,
  keys: ScaleoutKeys,
  agentId: string,
  lockKey: string,
): Promise<void> {
  await redis.eval(RELEASE_SCRIPT, 1, keys.runner(agentId), lockKey);
}

/** What {@link clearFinishedAgent} needs to know of the run. */
export interface FinishedRun {
  /**
   * The park mark was there when the run started. Only a parking run sets it, and a run that parks
   * does not finish, so without one at the start there is none to delete.
   */
  readonly parkMarkSeen: boolean;
  /** Keep the agent's keys this long, then let them expire; undefined = keep them. */
  readonly retainSeconds: number | undefined;
}

/**
 * Clears a finished agent's park mark and undecided approval requests (and, with `retainSeconds`,
 * sets its keys to expire), and waits for them and for `more`, the caller's commands issued on the
 * same connection in this turn (a batch's record of the agent). Every command goes on the
 * connection's auto-pipeline, so they leave in the turn's one write with whatever else the worker
 * queued in it: an explicit pipeline here was a write (a system call, and a read event for Redis)
 * of its own per agent (bench/RESULTS.md, redis27). Without a mark, retention or `more`, that is
 * one command.
 */
export async function clearFinishedAgent(
  redis: Redis,
  keys: ScaleoutKeys,
  approvals: RedisApprovals,
  agentId: string,
  run: FinishedRun,
  more?: Promise<unknown>,
): Promise<void> {
  const work: Promise<unknown>[] = [approvals.forget(agentId)];
  if (more !== undefined) work.push(more);
  if (run.parkMarkSeen) work.push(redis.del(keys.parked(agentId)));
  if (run.retainSeconds !== undefined) {
    const ms = Math.round(run.retainSeconds * 1000); // PEXPIRE takes whole milliseconds
    // With its registry entry (journal-registry.ts): gone with the stream, or once it expired.
    work.push(retainJournal(redis, keys.journal(agentId), ms));
    for (const key of [
      keys.inbox(agentId),
      keys.inboxAsked(agentId),
      keys.cancel(agentId),
      keys.meta(agentId),
      keys.runner(agentId),
      keys.decisions(agentId),
      keys.decisionWakeups(agentId),
    ]) {
      work.push(redis.pexpire(key, ms));
    }
  }
  await Promise.all(work);
}
