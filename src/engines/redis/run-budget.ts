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
import type { RunBudgetLimits } from '../../protocol/redis.ts';
import { STREAM_IDLE_TTL_MS } from './constants.ts';
import { LuaScript } from './script.ts';

// Adds one receipt; the hash expires as the supervisor's streams do when it stops writing.
const COUNT = new LuaScript(
  `
redis.call('HINCRBY', KEYS[1], 't', ARGV[1])
redis.call('HINCRBYFLOAT', KEYS[1], 'c', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
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

/** One supervisor's run budget, counted in Redis by every worker that runs its agents. */
export class RedisRunBudget {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #limits: RunBudgetLimits;

  constructor(redis: Redis, key: string, limits: RunBudgetLimits) {
    this.#redis = redis;
    this.#key = key;
    this.#limits = limits;
  }

  /**
   * Adds one model request's usage. Sent at once on the worker's connection: a `spent()` issued
   * after it on the same connection sees it.
   */
  count(tokens: number, costUsd: number | null): Promise<unknown> {
    return COUNT.run(
      this.#redis,
      [this.#key],
      [Math.max(0, Math.ceil(tokens)), Math.max(0, costUsd ?? 0), STREAM_IDLE_TTL_MS],
    );
  }

  /** Why the budget is spent (every worker's receipts counted), or undefined while it is not. */
  async spent(): Promise<string | undefined> {
    const [tokens, cost] = await this.#redis.hmget(this.#key, 't', 'c');
    return spentRunBudget(this.#limits, Number(tokens ?? 0), Number(cost ?? 0));
  }
}
