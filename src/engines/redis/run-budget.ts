/**
 * A supervisor's `runLimits` where its agents run. The supervisor counts every receipt too, and
 * cancels its agents once the budget is spent, but its cancel reaches a worker only after the
 * receipt's signal, the supervisor's count and the cancel's announcement have crossed Redis: an
 * agent that went on meanwhile started another model request (one more per running agent).
 *
 * So workers keep the count in Redis as well, in one hash per supervisor: each receipt is added
 * there (on the worker's connection, before the agent can ask for its next request, so the count
 * of its own last request is always in), and every model request first reads it. A request is
 * started only while the count is below the budget; once it is not, the agent ends as the
 * supervisor's cancel would end it (`Failed(cancelled)`, "the run budget is spent: ..."). What the
 * budget can still be passed by is what the requests already in flight when it was reached use,
 * as on the threads engine (those the supervisor's cancel cuts off count at their estimated size).
 */
import type { Redis } from 'ioredis';
import { COST_ROUNDING_USD } from '../../constants.ts';
import type { RunBudgetLimits } from '../../protocol/redis.ts';
import { STREAM_IDLE_TTL_MS } from './constants.ts';
import { LuaScript } from './script.ts';

// Adds one receipt, to the run's count and to its agent's (`t:<id>`, `c:<id>`: what its end tops
// up from); the hash expires as the supervisor's streams do when it stops writing.
const COUNT = new LuaScript(
  `
redis.call('HINCRBY', KEYS[1], 't', ARGV[1])
redis.call('HINCRBYFLOAT', KEYS[1], 'c', ARGV[2])
redis.call('HINCRBY', KEYS[1], 't:' .. ARGV[4], ARGV[1])
redis.call('HINCRBYFLOAT', KEYS[1], 'c:' .. ARGV[4], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`,
  1,
);

// An agent's job starts: its count exists from now on, so its end knows the worker keeps one.
const BEGIN = new LuaScript(
  `
redis.call('HSETNX', KEYS[1], 't:' .. ARGV[1], 0)
redis.call('HSETNX', KEYS[1], 'c:' .. ARGV[1], 0)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`,
  1,
);

// An agent ended: adds what it spent (ARGV[2] tokens, ARGV[3] USD) beyond what its receipts added,
// and forgets its own count. Nothing when they added it all (the usual end), nor without a count
// of its own (a worker of an earlier version counted its receipts in the run's count only).
const COUNT_END = new LuaScript(
  `
local counted = redis.call('HGET', KEYS[1], 't:' .. ARGV[1])
if not counted then return 0 end
local tokens = tonumber(counted)
local cost = tonumber(redis.call('HGET', KEYS[1], 'c:' .. ARGV[1]) or '0')
redis.call('HDEL', KEYS[1], 't:' .. ARGV[1], 'c:' .. ARGV[1])
local missingTokens = tonumber(ARGV[2]) - tokens
local missingCost = tonumber(ARGV[3]) - cost
if missingTokens <= 0 and missingCost <= tonumber(ARGV[5]) then return 0 end
if missingTokens > 0 then redis.call('HINCRBY', KEYS[1], 't', missingTokens) end
if missingCost > tonumber(ARGV[5]) then redis.call('HINCRBYFLOAT', KEYS[1], 'c', ARGV[3] - cost) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`,
  1,
);

/** The cancel reason of an agent stopped by its supervisor's spent run budget (as agents.ts words it). */
export function runBudgetCancelReason(message: string): string {
  return `the run budget is spent: ${message}`;
}

/** Why `usedTokens` and `usedCostUsd` have spent `limits`, or undefined while they have not. */
export function spentRunBudget(
  limits: RunBudgetLimits,
  usedTokens: number,
  usedCostUsd: number,
): string | undefined {
  if (limits.maxTotalTokens > 0 && usedTokens >= limits.maxTotalTokens) {
    return `The agents used ${usedTokens} tokens; the budget (runLimits.maxTotalTokens) is ${limits.maxTotalTokens}`;
  }
  if (limits.maxCostUsd > 0 && usedCostUsd >= limits.maxCostUsd) {
    return `The agents spent $${usedCostUsd.toFixed(4)}; the budget (runLimits.maxCostUsd) is $${limits.maxCostUsd}`;
  }
  return undefined;
}

/**
 * Counts what agent `agentId`, ended, spent itself (`tokens`, `costUsd`: its outcome less what a
 * retry inherited) beyond what its receipts added to the run budget at `key`, and forgets its own
 * count there. A worker journals a receipt before it counts it: one that died in between (or whose
 * count never reached Redis) left the receipt in the journal, and so in the outcome, but not here.
 * A receipt counted here whose signal never reached the supervisor is not counted twice. Nothing
 * for an agent with no count of its own ({@link RedisRunBudget.begin}): its worker, of an earlier
 * version, counted every receipt in the run's count alone.
 */
export function countEndedAgent(
  redis: Redis,
  key: string,
  agentId: string,
  tokens: number,
  costUsd: number | null,
): Promise<unknown> {
  return COUNT_END.run(
    redis,
    [key],
    [
      agentId,
      Math.max(0, Math.ceil(tokens)),
      Math.max(0, costUsd ?? 0),
      STREAM_IDLE_TTL_MS,
      COST_ROUNDING_USD,
    ],
  );
}

/** One supervisor's run budget, counted in Redis by every worker that runs its agents. */
export class RedisRunBudget {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #limits: RunBudgetLimits;
  readonly #agentId: string;

  /** The budget at `key`, counting the receipts of agent `agentId`. */
  constructor(redis: Redis, key: string, limits: RunBudgetLimits, agentId: string) {
    this.#redis = redis;
    this.#key = key;
    this.#limits = limits;
    this.#agentId = agentId;
  }

  /**
   * Starts the agent's own count (before its first request, on the worker's connection): its end
   * tops the run's count up from it (`countEndedAgent`).
   */
  begin(): Promise<unknown> {
    return BEGIN.run(this.#redis, [this.#key], [this.#agentId, STREAM_IDLE_TTL_MS]);
  }

  /**
   * Adds one model request's usage, to the run's count and the agent's. Sent at once on the
   * worker's connection: a `spent()` issued after it on the same connection sees it.
   */
  count(tokens: number, costUsd: number | null): Promise<unknown> {
    return COUNT.run(
      this.#redis,
      [this.#key],
      [Math.max(0, Math.ceil(tokens)), Math.max(0, costUsd ?? 0), STREAM_IDLE_TTL_MS, this.#agentId],
    );
  }

  /** Why the budget is spent (every worker's receipts counted), or undefined while it is not. */
  async spent(): Promise<string | undefined> {
    const [tokens, cost] = await this.#redis.hmget(this.#key, 't', 'c');
    return spentRunBudget(this.#limits, Number(tokens ?? 0), Number(cost ?? 0));
  }
}
