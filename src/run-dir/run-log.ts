/**
 * `events.jsonl`: what happened to a run besides its agents' own journals, one line per event as it
 * happens: sessions starting and ending, agents placed on threads, threads crashing and coming
 * back, agents restarted, provider pauses (429), the run's budget spent. The report draws these on
 * its timeline; journals alone cannot say when a thread died or a provider paused everyone.
 *
 * Lines are appended with one synchronous write each and written through `redactValue`, like
 * `results.jsonl`. A torn last line (the process died while writing it) is ignored by the reader.
 */
import { appendFileSync, closeSync, fstatSync, openSync } from 'node:fs';
import { redactValue } from '../journal/redact.ts';
import { MAX_RECORD_LINE_BYTES } from './constants.ts';
import { fileLines } from './task-rows.ts';

/** A cause as the log keeps it: the error code and message. */
export interface LoggedCause {
  readonly code: string | undefined;
  readonly message: string;
}

/** One line of `events.jsonl`. `ts` is an ISO 8601 time. */
export type RunLogEvent =
  | {
      readonly ts: string;
      readonly type: 'session';
      readonly event: 'started' | 'ended';
      readonly kind: 'fanout' | 'resume' | 'demo' | 'replay';
      readonly interrupted?: boolean;
    }
  | {
      /** An agent was placed on thread `hostId` (again, after a restart, when `resumed`). */
      readonly ts: string;
      readonly type: 'agent';
      readonly agentId: string;
      readonly hostId: number;
      readonly resumed: boolean;
    }
  | {
      readonly ts: string;
      readonly type: 'thread';
      readonly event: 'started' | 'crashed' | 'respawned';
      readonly hostId: number;
      readonly cause?: LoggedCause;
      /** Agents the crashed thread took with it. */
      readonly agents?: readonly string[];
    }
  | {
      readonly ts: string;
      readonly type: 'restarted';
      readonly agentId: string;
      readonly restart: number;
      readonly cause: LoggedCause;
    }
  | {
      /** A provider answered 429: every request to it waits `retryAfterMs`. */
      readonly ts: string;
      readonly type: 'backoff';
      readonly provider: string;
      readonly retryAfterMs: number;
    }
  | { readonly ts: string; readonly type: 'budget'; readonly code: string; readonly message: string };

/** Appends one event to the log at `path`. */
export function appendRunLog(path: string, event: RunLogEvent): void {
  appendFileSync(path, `${JSON.stringify(redactValue(event))}\n`);
}

/**
 * The events of the log at `path` (none when there is no log: run directories before it had one),
 * read a chunk at a time: the file is never held whole, only the line being read. A torn last line
 * (no `\n` after it), a damaged line and a line over `maxLineBytes` (skipped unread) are left out;
 * with `skipped`, the damaged and too long ones are counted there.
 */
export function readRunLog(
  path: string,
  maxLineBytes: number = MAX_RECORD_LINE_BYTES,
  skipped?: { count: number },
): RunLogEvent[] {
  const events: RunLogEvent[] = [];
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return events;
  }
  try {
    const size = fstatSync(fd).size;
    for (const line of fileLines(fd, maxLineBytes)) {
      // The last line, when no `\n` ends it, is torn (the process died while writing it).
      if (line.offset + line.length >= size) break;
      if (line.tooLong) {
        if (skipped) skipped.count += 1;
        continue;
      }
      try {
        const value = JSON.parse(line.text) as RunLogEvent;
        if (typeof value?.ts === 'string' && typeof value.type === 'string') events.push(value);
        else if (skipped) skipped.count += 1;
      } catch {
        // A damaged line describes nothing the report can draw; the rest still can be.
        if (skipped) skipped.count += 1;
      }
    }
  } finally {
    closeSync(fd);
  }
  return events;
}
