/**
 * Approvals on Redis: an agent's undecided requests and the decisions on them, so that any client
 * of the queue can decide (the supervisor that spawned the agent, another Supervisor process,
 * `troupe approve`) and the agent finds its decision whichever worker resumes it.
 *
 * - `agent:<id>:approvals` (hash): undecided requests, request id -> request; the agent's id is in
 *   the queue's `approval-agents` set while it has any. This is what `troupe approve` lists.
 * - `agent:<id>:decisions` (hash): request id -> decision. Written with HSETNX: the first decision
 *   wins, later ones change nothing.
 * - `agent:<id>:decided` (stream): one entry per decision, to wake a waiting worker (XREAD BLOCK).
 *
 * A decision and a park meet as an instruction and a park do (see agent-job.ts): the decider
 * writes the decision, then looks for the park mark; the worker marks the agent parked, moves the
 * job, then looks for the decision once more. Redis orders the steps, so one side promotes the job.
 */
import type { Redis } from 'ioredis';
import type { ApprovalDecision, ApprovalRequest } from '../../protocol/approvals.ts';
import type { BlockingPool } from './blocking-pool.ts';
import type { ScaleoutKeys } from './keys.ts';
import { LuaScript } from './script.ts';

/** Entries kept in an agent's wake-up stream: only the newest matter to a waiting worker. */
const WAKEUP_STREAM_MAX = 1_000;

// KEYS: decisions, wake-ups, parked mark, the agent's requests, the queue's agent set.
// ARGV: request id, decision (JSON), agent id.
const DECIDE = new LuaScript(
  `
local first = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
if first == 1 then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ${WAKEUP_STREAM_MAX}, '*', 'r', ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  if redis.call('HLEN', KEYS[4]) == 0 then redis.call('SREM', KEYS[5], ARGV[3]) end
end
return {first, redis.call('GET', KEYS[3]) or ''}
`,
  5,
);

// KEYS: decisions, the agent's requests, the queue's agent set. ARGV: request id, request (JSON), agent id.
const REQUEST = new LuaScript(
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
return 1
`,
  3,
);

/** What a decision changed. */
export interface DecideResult {
  /** It is the decision: no other was recorded before it. */
  readonly first: boolean;
  /** The agent's job was parked: whoever decided should promote it. */
  readonly parked: boolean;
}

/** An undecided request as listed for deciders. */
export type PendingRequest = ApprovalRequest;

/** Reads and writes approvals of one queue. */
export class RedisApprovals {
  readonly #redis: Redis;
  readonly #keys: ScaleoutKeys;

  constructor(redis: Redis, keys: ScaleoutKeys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** Records `request` as waiting for a decision, unless it was decided already (then false). */
  async request(request: ApprovalRequest): Promise<boolean> {
    const { agentId } = request;
    const keys = this.#keys;
    const added = await REQUEST.run(
      this.#redis,
      [keys.decisions(agentId), keys.approvalRequests(agentId), keys.approvalAgents],
      [request.requestId, JSON.stringify(request), agentId],
    );
    return Number(added) === 1;
  }

  /** Records the decision on `requestId` of `agentId`; the first one wins. */
  async decide(agentId: string, requestId: string, decision: ApprovalDecision): Promise<DecideResult> {
    const keys = this.#keys;
    const reply = (await DECIDE.run(
      this.#redis,
      [
        keys.decisions(agentId),
        keys.decisionWakeups(agentId),
        keys.parked(agentId),
        keys.approvalRequests(agentId),
        keys.approvalAgents,
      ],
      [requestId, JSON.stringify(decision), agentId],
    )) as [number, string];
    return { first: Number(reply[0]) === 1, parked: reply[1] !== '' };
  }

  /** The decision on `requestId`, if there is one. */
  async decision(agentId: string, requestId: string): Promise<ApprovalDecision | undefined> {
    const text = await this.#redis.hget(this.#keys.decisions(agentId), requestId);
    return text === null ? undefined : parseDecision(text);
  }

  /**
   * Blocks up to `timeoutMs` (at least 1 ms) for the decision on `requestId`; undefined when the
   * time passed or `signal` aborted.
   */
  async wait(
    pool: BlockingPool,
    agentId: string,
    requestId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ApprovalDecision | undefined> {
    const wakeups = this.#keys.decisionWakeups(agentId);
    const until = Date.now() + Math.max(1, timeoutMs);
    // Read where the stream ends first: a decision written after this is seen by XREAD below.
    const top = await this.#redis.xrevrange(wakeups, '+', '-', 'COUNT', 1);
    let from = top[0]?.[0] ?? '0-0';
    for (;;) {
      const ready = await this.decision(agentId, requestId);
      if (ready !== undefined || signal.aborted) return ready;
      const left = until - Date.now();
      if (left <= 0) return undefined;
      const reply = await pool.run(
        (redis) =>
          redis.xread(
            'COUNT',
            WAKEUP_STREAM_MAX,
            'BLOCK',
            Math.max(1, Math.ceil(left)),
            'STREAMS',
            wakeups,
            from,
          ),
        signal,
        null,
      );
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0 && (signal.aborted || Date.now() >= until)) return undefined;
      from = entries.at(-1)?.[0] ?? from;
    }
  }

  /** Undecided requests of every agent of the queue, oldest first. */
  async pending(): Promise<PendingRequest[]> {
    const agents = await this.#redis.smembers(this.#keys.approvalAgents);
    const requests: PendingRequest[] = [];
    for (const agentId of agents) {
      const entries = await this.#redis.hvals(this.#keys.approvalRequests(agentId));
      for (const text of entries) {
        const request = parseRequest(text);
        if (request) requests.push(request);
      }
    }
    return requests.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt));
  }

  /**
   * Forgets the agent's undecided requests (it ended). The agent is in the queue's set only while
   * it has some (REQUEST and DECIDE keep the two together), so an agent without any, the usual
   * case, costs one DEL.
   */
  async forget(agentId: string): Promise<void> {
    if ((await this.#redis.del(this.#keys.approvalRequests(agentId))) > 0) {
      await this.#redis.srem(this.#keys.approvalAgents, agentId);
    }
  }
}

function parseDecision(text: string): ApprovalDecision | undefined {
  try {
    const value = JSON.parse(text) as Partial<ApprovalDecision>;
    if (typeof value.approved === 'boolean' && typeof value.by === 'string') return value as ApprovalDecision;
  } catch {
    // Unreadable: treated as absent.
  }
  return undefined;
}

function parseRequest(text: string): PendingRequest | undefined {
  try {
    const value = JSON.parse(text) as Partial<ApprovalRequest>;
    if (
      typeof value.requestId === 'string' &&
      typeof value.agentId === 'string' &&
      typeof value.tool === 'string' &&
      typeof value.requestedAt === 'string'
    ) {
      return value as PendingRequest;
    }
  } catch {
    // Unreadable: left out.
  }
  return undefined;
}
