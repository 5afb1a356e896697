/**
 * Usage roll-up over an agent tree, shared by both backends: an agent's tree usage is its own plus
 * every descendant's, so a parent's budget view includes the workers it spawned.
 */
import { addUsage } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';

/** What roll-up needs of an agent record. */
export interface UsageNode {
  readonly spec: { readonly parentId: string | undefined };
  treeUsage: Usage;
  treeCostUsd: number;
}

/**
 * Adds an ended agent's `usage` and `costUsd` to its own tree totals and to every ancestor's that
 * `agents` still holds (the walk stops at the first unknown one). An unknown cost (`null`: no price
 * for the model) adds nothing to the tree's cost; `usage.estimated` carries over.
 */
export function rollUpUsage<T extends UsageNode>(
  agents: ReadonlyMap<string, T>,
  ended: T,
  usage: Usage,
  costUsd: number | null,
): void {
  for (let node: T | undefined = ended; node !== undefined; ) {
    node.treeUsage = addUsage(node.treeUsage, usage);
    node.treeCostUsd += costUsd ?? 0;
    const parentId: string | undefined = node.spec.parentId;
    node = parentId === undefined ? undefined : agents.get(parentId);
  }
}
