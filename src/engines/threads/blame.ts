/**
 * Who a thread death is charged to. The journal knows: every ToolCall is written (synchronously)
 * before its tool runs, so an agent whose journal ends with a tool call that runs in the thread,
 * started and not finished, was running it when the thread died. Calls that wait elsewhere do not
 * count: `wait_for_instruction` (parked on the main thread), `complete_task` and host tools (run on
 * the supervisor), and a call waiting for its approval (ApprovalRequested, not yet decided).
 *
 * A thread that stopped answering heartbeats was blocked by code that never yields, and its stack
 * (stack-probe.ts) says whose: when it is a provider module's, the agents of that provider with no
 * call in flight are the suspects, and agents merely awaiting an async tool are not.
 */

import { realpathSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { SerializedError } from '../../errors.ts';
import type { ProviderConfig } from '../../protocol/messages.ts';
import { fileOf } from './stack-probe.ts';

/** Bytes read from the end of a journal: the tool calls of the last round are in there. */
const TAIL_BYTES = 1 << 20;

/** Journals read at once when a thread with many agents dies. */
const READ_CONCURRENCY = 32;

/** What an agent's journal says it was doing when its thread died. */
export interface PendingWork {
  /** Tool calls running in the thread: started, no result, not in `elsewhere`, not awaiting approval. */
  readonly running: readonly string[];
  /** A call is in flight elsewhere (a host tool, `wait_for_instruction`) or awaits its approval. */
  readonly waiting: boolean;
}

const NOTHING: PendingWork = { running: [], waiting: false };

/**
 * The tool calls in `file` that started and have no result, split into those running in the
 * thread and those that wait elsewhere (`elsewhere`: tools that do not run in the thread).
 * Nothing when the file is missing or unreadable.
 */
export async function pendingWork(file: string, elsewhere: ReadonlySet<string>): Promise<PendingWork> {
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, TAIL_BYTES);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      text = buffer.toString('utf8');
      // A tail that starts mid-line: drop the partial line.
      if (length < size) text = text.slice(text.indexOf('\n') + 1);
    } finally {
      await handle.close();
    }
  } catch {
    return NOTHING;
  }
  const started = new Map<string, string>();
  const awaitingApproval = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.includes('"type":"Tool') && !line.includes('"type":"Approval')) continue;
    let event: { type?: unknown; callId?: unknown; name?: unknown };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      continue; // A torn last line: the thread died while writing it.
    }
    if (typeof event.callId !== 'string') continue;
    if (event.type === 'ToolCall' && typeof event.name === 'string') started.set(event.callId, event.name);
    else if (event.type === 'ToolResult') started.delete(event.callId);
    else if (event.type === 'ApprovalRequested') awaitingApproval.add(event.callId);
    else if (event.type === 'ApprovalDecided') awaitingApproval.delete(event.callId);
  }
  const running: string[] = [];
  let waiting = false;
  for (const [callId, name] of started) {
    if (elsewhere.has(name) || awaitingApproval.has(callId)) waiting = true;
    else running.push(name);
  }
  return { running, waiting };
}

/** {@link pendingWork} of many journals, a bounded number at a time. */
export async function pendingWorkOf(
  files: readonly string[],
  elsewhere: ReadonlySet<string>,
): Promise<PendingWork[]> {
  const results: PendingWork[] = new Array(files.length);
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < files.length) {
      const index = next++;
      results[index] = await pendingWork(files[index] ?? '', elsewhere);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, files.length) }, work));
  return results;
}

/**
 * The provider keys whose module holds the blocked thread, from a `heartbeat_timeout` cause's
 * `culprit` field (the file stack-probe.ts found in its stack): the `kind: 'module'` providers
 * imported from that file. Undefined when the cause names no such file or none is a provider's.
 */
export function culpritProviders(
  cause: SerializedError,
  providers: Readonly<Record<string, ProviderConfig>>,
): ReadonlySet<string> | undefined {
  const culprit = cause.fields?.culprit;
  if (cause.code !== 'heartbeat_timeout' || typeof culprit !== 'string') return undefined;
  const keys = new Set<string>();
  for (const [key, config] of Object.entries(providers)) {
    if (config.kind !== 'module') continue;
    const file = fileOf(config.module);
    if (file !== undefined && sameFile(file, culprit)) keys.add(key);
  }
  return keys.size === 0 ? undefined : keys;
}

function sameFile(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}
