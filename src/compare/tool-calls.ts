/**
 * The tool calls an agent made, read from its journal, and the difference between two agents'
 * calls. Calls are compared as a multiset of (canonical tool name, canonical JSON of the
 * arguments): order is ignored, repeats count. `complete_task` is left out: its arguments are
 * the result, which the comparison shows as the item's output and scores.
 */
import { existsSync } from 'node:fs';
import { canonicalJson } from '../journal/canonical-json.ts';
import { readJournal } from '../journal/reader.ts';
import { COMPLETE_TASK } from '../tools/builtin/orchestration.ts';

/** One distinct call and how many times it was made. */
export interface ToolCallCount {
  readonly name: string;
  /** Canonical JSON of the arguments (the raw text when they did not parse). */
  readonly args: string;
  readonly count: number;
}

/** How two agents' tool calls differ. */
export interface ToolCallDiff {
  /** Calls only the first agent made (beyond the ones both made). */
  readonly onlyA: readonly ToolCallCount[];
  /** Calls only the second agent made. */
  readonly onlyB: readonly ToolCallCount[];
  /** Calls both made. */
  readonly common: number;
}

/** Calls of the agent whose journal is `file`, counted; undefined when there is no journal. */
export function toolCallsOf(file: string): Map<string, ToolCallCount> | undefined {
  if (!existsSync(file)) return undefined;
  const calls = new Map<string, ToolCallCount>();
  for (const event of readJournal(file).events) {
    if (event.type !== 'ToolCall' || event.name === COMPLETE_TASK) continue;
    const args = event.args === undefined ? (event.rawArgs ?? '') : canonicalJson(event.args);
    const key = `${event.name}\u0000${args}`;
    const known = calls.get(key);
    calls.set(key, { name: event.name, args, count: (known?.count ?? 0) + 1 });
  }
  return calls;
}

/** The calls in `a` and not `b`, in `b` and not `a`, and how many both made. */
export function diffToolCalls(
  a: ReadonlyMap<string, ToolCallCount>,
  b: ReadonlyMap<string, ToolCallCount>,
): ToolCallDiff {
  const onlyA: ToolCallCount[] = [];
  const onlyB: ToolCallCount[] = [];
  let common = 0;
  for (const [key, call] of a) {
    const other = b.get(key)?.count ?? 0;
    common += Math.min(call.count, other);
    if (call.count > other) onlyA.push({ ...call, count: call.count - other });
  }
  for (const [key, call] of b) {
    const other = a.get(key)?.count ?? 0;
    if (call.count > other) onlyB.push({ ...call, count: call.count - other });
  }
  const order = (x: ToolCallCount, y: ToolCallCount): number =>
    x.name === y.name ? (x.args < y.args ? -1 : 1) : x.name < y.name ? -1 : 1;
  return { onlyA: onlyA.sort(order), onlyB: onlyB.sort(order), common };
}

/** `read_file {"path":"a.md"} ×2`, arguments cut to `max` characters. */
export function formatToolCall(call: ToolCallCount, max = 80): string {
  const args = call.args.length > max ? `${call.args.slice(0, max - 1)}…` : call.args;
  return `${call.name} ${args}${call.count > 1 ? ` ×${call.count}` : ''}`;
}
