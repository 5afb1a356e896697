/**
 * Usage roll-up over an agent tree, shared by both backends: an agent's tree usage is its own plus
 * every descendant's, so a parent's budget view includes the workers it spawned.
 */
import { ownSpend } from '../loop/outcome.ts';
import type { InheritedSpend } from '../loop/types.ts';
import { addUsage } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';

/** What roll-up needs of an agent record. */
export interface UsageNode {
  readonly spec: { readonly parentId: string | undefined };
  treeUsage: Usage;
  treeCostUsd: number;
}

/**
 * Adds an ended agent's spend (its outcome's `usage` and `costUsd`) to its own tree totals, and
 * what it spent itself to every ancestor's that `agents` still holds (the walk stops at the first
 * unknown one). A retry's outcome also holds what the attempt it continues spent (`inherited`),
 * which that attempt's end added to the same ancestors: they add only the rest. An unknown cost
 * (`null`: no price for the model) adds nothing to the tree's cost; `usage.estimated` carries over.
 */
export function rollUpUsage<T extends UsageNode>(
  agents: ReadonlyMap<string, T>,
  ended: T,
  spend: {
    readonly usage: Usage;
    readonly costUsd: number | null;
    readonly inherited?: InheritedSpend | undefined;
  },
): void {
  ended.treeUsage = addUsage(ended.treeUsage, spend.usage);
  ended.treeCostUsd += spend.costUsd ?? 0;
  const { usage, costUsd } = ownSpend(spend);
  for (let node = parentOf(agents, ended); node !== undefined; node = parentOf(agents, node)) {
    node.treeUsage = addUsage(node.treeUsage, usage);
    node.treeCostUsd += costUsd ?? 0;
  }
}

function parentOf<T extends UsageNode>(agents: ReadonlyMap<string, T>, node: T): T | undefined {
  const parentId = node.spec.parentId;
  return parentId === undefined ? undefined : agents.get(parentId);
}
