/**
 * A recording read from a recorded agent's journal: the calls a replay may answer from, the
 * instructions the agent received, and the key two calls are matched by.
 *
 * Matching rule: two calls match when they name the same canonical tool and their arguments, as
 * the journal stores them (secret-looking values masked, see {@link callKey}), are the same
 * canonical JSON: key order and whitespace never matter, any other difference does.
 */
import { SystemError } from '../errors.ts';
import { canonicalJson } from '../journal/canonical-json.ts';
import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import type { AuditEvent, EventOf } from '../journal/events.ts';
import { redactValue } from '../journal/redact.ts';
import type { RecordedCall, ReplayRecording } from './types.ts';

/**
 * The key a call is matched by: its canonical tool name and the canonical JSON of its arguments,
 * masked the way a journal masks them (so a live call whose arguments hold a secret matches the
 * recorded call, whose journal holds `[REDACTED]` in its place).
 */
export function callKey(name: string, args: unknown): string {
  return `${name}\n${canonicalJson(redactValue(args ?? {}))}`;
}

/**
 * The recording of the agent whose journal `events` is, referred to as `of`. Every call with
 * parsed arguments and a result is recorded, failures included, except calls that never ran: a
 * refusal of the loop (`refused`), a call a replay refused, and a call cut off by a crash (its
 * result says it was interrupted). Throws `SystemError('journal_not_started')` when the events do
 * not begin with a Started event.
 */
export function recordingOf(events: readonly AuditEvent[], of: string): ReplayRecording {
  const started = startedOf(events);
  const calls = new Map<string, EventOf<'ToolCall'>>();
  const recorded: RecordedCall[] = [];
  for (const event of events) {
    if (event.type === 'ToolCall') calls.set(event.callId, event);
    if (event.type !== 'ToolResult') continue;
    const call = calls.get(event.callId);
    if (call?.args === undefined || event.refused === true || event.replay === 'refused') continue;
    if (!event.ok && event.text === INTERRUPTED_TOOL_RESULT) continue;
    recorded.push({
      callId: call.callId,
      name: call.name,
      args: call.args,
      result: {
        ok: event.ok,
        text: event.text,
        stateUpdates: event.stateUpdates,
        displayedStateKeys: event.displayedStateKeys,
        ...(event.data === undefined ? {} : { data: event.data }),
      },
    });
  }
  return { ref: { of, agentId: started.agentId }, calls: recorded };
}

/** The instructions the recorded agent received, in index order (what a replay sends it again). */
export function recordedInstructions(events: readonly AuditEvent[]): string[] {
  const byIndex = new Map<number, string>();
  for (const event of events) if (event.type === 'Instructed') byIndex.set(event.index, event.text);
  return [...byIndex.entries()].sort(([a], [b]) => a - b).map(([, text]) => text);
}

/** The Started event `events` begin with. */
export function startedOf(events: readonly AuditEvent[]): EventOf<'Started'> {
  const first = events[0];
  if (first?.type !== 'Started') {
    throw new SystemError(
      'journal_not_started',
      `Expected a recorded journal that begins with a Started event, found ${first ? first.type : 'no events'}`,
      { found: first?.type },
    );
  }
  return first;
}
