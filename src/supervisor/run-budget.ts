/**
 * A budget across every agent of a Supervisor (`runLimits`), as `troupe fanout` has one across a
 * run: tokens and cost summed from every model request's receipt, subagents and judges included.
 * Each agent's own limits still bound it; this bounds what all of them spend together.
 */

/** Budgets across every agent. 0 or absent: unlimited. */
export interface RunLimits {
  /** Input + output tokens of every model request of every agent. */
  readonly maxTotalTokens?: number;
  /** USD; requests of models whose price is unknown count nothing. */
  readonly maxCostUsd?: number;
}

/** {@link RunLimits} with the defaults filled (0 = unlimited). */
export interface PreparedRunLimits {
  readonly maxTotalTokens: number;
  readonly maxCostUsd: number;
}

/** Which budget was spent: the error code of what it stops. */
export type RunBudgetCode = 'run_token_budget' | 'run_cost_budget';

/** The budget that `usedTokens` and `usedCostUsd` have reached, if any. */
export function spentBudget(
  limits: PreparedRunLimits,
  usedTokens: number,
  usedCostUsd: number,
): RunBudgetCode | undefined {
  if (limits.maxTotalTokens > 0 && usedTokens >= limits.maxTotalTokens) return 'run_token_budget';
  if (limits.maxCostUsd > 0 && usedCostUsd >= limits.maxCostUsd) return 'run_cost_budget';
  return undefined;
}

/** `supervisor:budget`: the Supervisor's `runLimits` are spent; every agent is being cancelled. */
export interface RunBudgetSpent {
  readonly code: RunBudgetCode;
  readonly message: string;
  readonly usedTokens: number;
  readonly usedCostUsd: number;
  readonly limits: PreparedRunLimits;
}

/** What a Supervisor's agents have spent so far, against its `runLimits`. */
export interface RunUsage {
  readonly usedTokens: number;
  readonly usedCostUsd: number;
  readonly limits: PreparedRunLimits;
  /** Set once a budget is spent. */
  readonly spent: RunBudgetSpent | undefined;
}

/** Counts the receipts of every agent against `runLimits`. */
export class RunBudget {
  readonly #limits: PreparedRunLimits;
  #usedTokens = 0;
  #usedCostUsd = 0;
  #spent: RunBudgetSpent | undefined;

  constructor(limits: PreparedRunLimits) {
    this.#limits = limits;
  }

  /** True when a limit is set: receipts must then be counted. */
  get limited(): boolean {
    return this.#limits.maxTotalTokens > 0 || this.#limits.maxCostUsd > 0;
  }

  get spent(): RunBudgetSpent | undefined {
    return this.#spent;
  }

  get usage(): RunUsage {
    return {
      usedTokens: this.#usedTokens,
      usedCostUsd: this.#usedCostUsd,
      limits: this.#limits,
      spent: this.#spent,
    };
  }

  /** Counts one request; returns the budget spent by it, the first time one is. */
  add(tokens: number, costUsd: number | null): RunBudgetSpent | undefined {
    this.#usedTokens += tokens;
    this.#usedCostUsd += costUsd ?? 0;
    if (this.#spent !== undefined) return undefined;
    const code = spentBudget(this.#limits, this.#usedTokens, this.#usedCostUsd);
    if (code === undefined) return undefined;
    const message =
      code === 'run_token_budget'
        ? `The agents used ${this.#usedTokens} tokens; the budget (runLimits.maxTotalTokens) is ${this.#limits.maxTotalTokens}`
        : `The agents spent $${this.#usedCostUsd.toFixed(4)}; the budget (runLimits.maxCostUsd) is $${this.#limits.maxCostUsd}`;
    this.#spent = {
      code,
      message,
      usedTokens: this.#usedTokens,
      usedCostUsd: this.#usedCostUsd,
      limits: this.#limits,
    };
    return this.#spent;
  }
}
