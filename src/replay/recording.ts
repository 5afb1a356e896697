/**
 * A recording read from a recorded agent's journal: the calls a replay may answer from, the
 * instructions the agent received, and the key two calls are matched by.
 *
 * Matching rule: two calls match when they name the same canonical tool and their arguments, under
 * their canonical parameter names and masked as the journal masks them (see {@link callKey}), are
 * the same canonical JSON: key order, whitespace and a definition's `paramNameOverrides` never
 * matter, any other difference does.
 */
import { SystemError } from '../errors.ts';
import { canonicalJson } from '../journal/canonical-json.ts';
import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import type { AuditEvent, EventOf } from '../journal/events.ts';
import { redactValue } from '../journal/redact.ts';
import { recordedDefinition } from '../loop/pinning.ts';
import { canonicalArgs } from '../tools/params.ts';
import type { RecordedCall, ReplayRecording } from './types.ts';

/**
 * The key a call is matched by: its canonical tool name and the canonical JSON of its arguments,
 * masked the way a journal masks them (so a live call whose arguments hold a secret matches the
 * recorded call, whose journal holds `[REDACTED]` in its place).
 */
export function callKey(name: string, args: unknown): string {
  return `${name}\n${canonicalJson(redactValue(args ?? {}))}`;
}

/** A definition's `paramNameOverrides`: model-facing parameter names by canonical tool and parameter. */
export type ParamNameOverrides = Readonly<Record<string, Readonly<Record<string, string>>>>;

/**
 * The recording of the agent whose journal `events` is, referred to as `of`. Every call with
 * parsed arguments and a result is recorded, failures included, except calls that never ran: a
 * refusal of the loop (`refused`), a call a replay refused, and a call cut off by a crash (its
 * result says it was interrupted). A call's arguments are recorded under their canonical names:
 * the journal holds them as the model gave them, and the `paramNameOverrides` of the definition
 * the Started event pins map them back ({@link recordedParamNameOverrides}). Throws
 * `SystemError('journal_not_started')` when the events do not begin with a Started event.
 */
export async function recordingOf(events: readonly AuditEvent[], of: string): Promise<ReplayRecording> {
  const started = startedOf(events);
  const overrides = await recordedParamNameOverrides(started);
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
      args: canonicalArgs(call.name, call.args, overrides),
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

/**
 * The `paramNameOverrides` of the definition `started` pins: read from its recorded content, or
 * from its recorded text parsed the way it was parsed then. None for a journal that does not
 * record its definition (before troupe 0.4) or whose text no longer reads as a definition: its
 * calls' arguments are then taken as journalled. The definition parser is imported only when a
 * recorded text mentions `paramNameOverrides`.
 */
export async function recordedParamNameOverrides(started: EventOf<'Started'>): Promise<ParamNameOverrides> {
  const { text } = started.definition;
  // Most definitions rename nothing: their text is not parsed again for it.
  if (text !== undefined && !text.includes('paramNameOverrides')) return {};
  try {
    return (await recordedDefinition(started))?.paramNameOverrides ?? {};
  } catch {
    return {}; // A recorded text that no longer parses: its calls are taken as journalled.
  }
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
