/**
 * The tool calls an agent made, read from its journal, and the difference between two agents'
 * calls. Calls are compared as a multiset of (canonical tool name, canonical JSON of the
 * arguments): order is ignored, repeats count. `complete_task` is left out: its arguments are
 * the result, which the comparison shows as the item's output and scores.
 */
import { closeSync, existsSync, openSync } from 'node:fs';
import { UserError } from '../errors.ts';
import { canonicalJson } from '../journal/canonical-json.ts';
import { MAX_JOURNAL_LINE_BYTES } from '../journal/constants.ts';
import type { EventOf } from '../journal/events.ts';
import { fileLines } from '../run-dir/task-rows.ts';
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

/**
 * How a ToolCall line starts its `type` member. Journal lines are canonical JSON, so the member is
 * written exactly so; inside a string value its quotes would be escaped, so no other line holds it.
 */
const TOOL_CALL_MEMBER = '"type":"ToolCall"';

/**
 * Calls of the agent whose journal is `file`, counted; undefined when there is no journal. Only
 * the ToolCall lines are parsed (a comparison of 1,000 items reads 2,000 journals, most of whose
 * bytes are requests and results), and the hash chain is not checked: `troupe verify` does that.
 * The journal is read a chunk at a time (never whole: a 2 GB journal was one 2 GB string), only the
 * line being read held. A line that does not parse (a torn last line) is skipped; a line over
 * `maxLineBytes` is not read: UserError `journal_line_too_long` (`path`, `line`, `offset`, `limit`),
 * as `troupe show` says of it, since a call it may hold cannot be left out of the count unsaid.
 */
export function toolCallsOf(
  file: string,
  maxLineBytes: number = MAX_JOURNAL_LINE_BYTES,
): Map<string, ToolCallCount> | undefined {
  if (!existsSync(file)) return undefined;
  const calls = new Map<string, ToolCallCount>();
  const fd = openSync(file, 'r');
  try {
    for (const line of fileLines(fd, maxLineBytes)) {
      if (line.tooLong) {
        throw new UserError(
          'journal_line_too_long',
          `Expected the lines of journal ${file} to hold at most ${maxLineBytes} bytes each, but line ${line.number} (at byte ${line.offset}) is longer; it was not read`,
          { path: file, line: line.number, offset: line.offset, limit: maxLineBytes },
        );
      }
      if (line.text.includes(TOOL_CALL_MEMBER)) count(calls, line.text);
    }
  } finally {
    closeSync(fd);
  }
  return calls;
}

function count(calls: Map<string, ToolCallCount>, line: string): void {
  let event: EventOf<'ToolCall'>;
  try {
    event = JSON.parse(line) as EventOf<'ToolCall'>;
  } catch {
    return;
  }
  if (event.type !== 'ToolCall' || event.name === COMPLETE_TASK) return;
  const args = event.args === undefined ? (event.rawArgs ?? '') : canonicalJson(event.args);
  const key = `${event.name}\u0000${args}`;
  const known = calls.get(key);
  calls.set(key, { name: event.name, args, count: (known?.count ?? 0) + 1 });
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
