/**
 * Who a thread death is charged to. The journal knows: every ToolCall is written (synchronously)
 * before its tool runs, so an agent whose journal ends with a tool call that runs in the thread,
 * started and not finished, was running it when the thread died. Calls that wait elsewhere do not
 * count: `wait_for_instruction` (parked on the main thread), `complete_task` and host tools (run on
 * the supervisor), and a call waiting for its approval (ApprovalRequested, not yet decided).
 */
import { open } from 'node:fs/promises';

/** Bytes read from the end of a journal: the tool calls of the last round are in there. */
const TAIL_BYTES = 1 << 20;

/** Journals read at once when a thread with many agents dies. */
const READ_CONCURRENCY = 32;

/**
 * Names of the tool calls in `file` that started and have no result, leaving out `elsewhere`
 * (tools that do not run in the thread). Empty when the file is missing or unreadable.
 */
export async function pendingToolCalls(file: string, elsewhere: ReadonlySet<string>): Promise<string[]> {
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
    return [];
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
  return [...started]
    .filter(([callId, name]) => !elsewhere.has(name) && !awaitingApproval.has(callId))
    .map(([, name]) => name);
}

/** {@link pendingToolCalls} of many journals, a bounded number at a time. */
export async function pendingToolCallsOf(
  files: readonly string[],
  elsewhere: ReadonlySet<string>,
): Promise<string[][]> {
  const results: string[][] = new Array(files.length);
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < files.length) {
      const index = next++;
      results[index] = await pendingToolCalls(files[index] ?? '', elsewhere);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, files.length) }, work));
  return results;
}
