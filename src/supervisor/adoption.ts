/**
 * What a parent resumed in a new supervisor (`troupe resume`, `spawn(..., { resume: true })`) had
 * of its children, read from journals: the supervisor that ran it kept its children and the
 * outcomes of its host calls in memory only, so the new one rebuilds them before the parent runs.
 *
 * - Its children are the agents its `spawn_agent` results name (`data.agentId`); a finished child's
 *   own children (its `spawn_agent` results) are held too, at any depth, and an unfinished one
 *   among them, which nothing would await, is ended ({@link orphanOutcome}) and held so.
 * - A `spawn_agent` call with no result (cut off by the stop) may have started a child all the same:
 *   the child's journal names the call in `Started.spawnCallId` (journals before it: the parent in
 *   `parentId`, and the call's `agent` and `task`). That child is the call's result. The search
 *   (`Engine.childStarts`) reads the ids of a `Started` line of any length; what its bounds leave
 *   unread is named in a warning ({@link warnNotExamined}). `troupe resume` decides which nested
 *   agents a resumed parent adopts with the same functions (src/run-dir/resume-plan.ts).
 * - The instructions it sent each child (`send_instruction` results, keyed by the index each
 *   recorded) that the child had not read are delivered again after those it read, so a child
 *   resumed while parked gets each once, whatever a program sent it between; so is the
 *   instruction of a cut-off `send_instruction` to a child that goes on, unless the child's journal
 *   shows it read it (see {@link instructionsFor}).
 *
 * Only journals are read here; the Supervisor (agents.ts) makes the records.
 */
import { MAX_ADOPTION_SCAN_JOURNALS, MAX_STARTED_HEAD_BYTES } from '../constants.ts';
import type { ChildStart } from '../engines/engine.ts';
import type { AuditEvent, EventOf, InstructionIndex } from '../journal/events.ts';
import { resumeState } from '../journal/resume.ts';
import { cancelledError, failedOutcome } from '../loop/outcome.ts';
import type { AgentOutcome } from '../loop/types.ts';
import { AWAIT_AGENTS, SEND_INSTRUCTION, SPAWN_AGENT } from '../protocol/messages.ts';

/** A child of the parent, in the order it was spawned. */
export interface KnownChild {
  readonly agentId: string;
  /** The definition name the parent's `spawn_agent` gave (undefined when its call is not in the journal). */
  readonly agent: string | undefined;
  /** The parent's `spawn_agent` arguments: what the child is spawned with if it never started. */
  readonly args: Readonly<Record<string, unknown>> | undefined;
}

/** A host call of the parent's that has no result in its journal. */
export interface CutOffCall {
  readonly callId: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** `seq` of its ToolCall in the parent's journal. */
  readonly seq?: number;
}

/** What a resumed parent's journal says of its children. */
export interface ParentJournal {
  /** Children its `spawn_agent` results name, oldest first. */
  readonly children: KnownChild[];
  /** Its `spawn_agent` calls that have no result. */
  readonly cutOffSpawns: CutOffCall[];
  /** Its `await_agents` calls that have no result (they only wait: the new supervisor runs them). */
  readonly cutOffAwaits: CutOffCall[];
  /** Its `send_instruction` calls that have no result. */
  readonly cutOffSends: CutOffCall[];
  /** The instructions its `send_instruction` results say it queued, by child, in order. */
  readonly sent: Map<string, SentInstruction[]>;
}

/** An instruction a parent sent a child, with the index its `send_instruction` result recorded. */
export interface SentInstruction {
  readonly text: string;
  /** Absent in journals written before the index was recorded, and for a cut-off call. */
  readonly index?: number;
  /**
   * `seq` of the call's ToolCall in the parent's journal: what a child's `Resumed.instructionIndices`
   * names when an adoption delivered the instruction again at another index.
   */
  readonly callSeq?: number;
}

/** Reads a parent's journal; undefined when it has ended or never started (nothing to adopt). */
export function parentJournal(events: readonly AuditEvent[]): ParentJournal | undefined {
  if (events[0]?.type !== 'Started') return undefined;
  const state = resumeState(events);
  if (state.ended !== undefined) return undefined;
  const calls = new Map<string, EventOf<'ToolCall'>>();
  const children = spawnedChildren(events);
  const sent = new Map<string, SentInstruction[]>();
  for (const event of events) {
    if (event.type === 'ToolCall') calls.set(event.callId, event);
    if (event.type !== 'ToolResult' || event.refused === true) continue;
    // A send_instruction abandoned at its time limit told the model its instruction may still be
    // delivered: it is sent (without an index), so a resumed child not yet holding it gets it.
    const abandoned = (event.data as { abandoned?: unknown } | undefined)?.abandoned === true;
    if (!event.ok && !(abandoned && event.name === SEND_INSTRUCTION)) continue;
    const args = calls.get(event.callId)?.args;
    if (event.name === SEND_INSTRUCTION) {
      const to = stringOf(args?.agentId);
      const text = stringOf(args?.text);
      if (to === undefined || text === undefined) continue;
      const index = (event.data as { index?: unknown } | undefined)?.index;
      const callSeq = calls.get(event.callId)?.seq;
      const instruction = {
        text,
        ...(Number.isSafeInteger(index) ? { index: index as number } : {}),
        ...(callSeq === undefined ? {} : { callSeq }),
      };
      const list = sent.get(to);
      if (list === undefined) sent.set(to, [instruction]);
      else list.push(instruction);
    }
  }
  const cutOff = (name: string): CutOffCall[] =>
    state.pendingCalls
      .filter((call) => call.name === name)
      .map((call) => ({ callId: call.callId, args: call.args ?? {}, seq: call.seq }));
  return {
    children,
    cutOffSpawns: cutOff(SPAWN_AGENT),
    cutOffAwaits: cutOff(AWAIT_AGENTS),
    cutOffSends: cutOff(SEND_INSTRUCTION),
    sent,
  };
}

/**
 * The children an agent's journal shows it spawned (its `spawn_agent` results), oldest first,
 * whether or not it has ended: a finished child orchestrator's own children are adopted with it.
 */
export function spawnedChildren(events: readonly AuditEvent[]): KnownChild[] {
  const calls = new Map<string, EventOf<'ToolCall'>>();
  const children: KnownChild[] = [];
  const seen = new Set<string>();
  for (const event of events) {
    if (event.type === 'ToolCall' && event.name === SPAWN_AGENT) calls.set(event.callId, event);
    if (event.type !== 'ToolResult' || event.name !== SPAWN_AGENT || !event.ok || event.refused === true)
      continue;
    const agentId = spawnedId(event);
    if (agentId === undefined || seen.has(agentId)) continue;
    seen.add(agentId);
    const args = calls.get(event.callId)?.args;
    children.push({ agentId, agent: stringOf(args?.agent), args });
  }
  return children;
}

/** The child a `spawn_agent` result names. */
function spawnedId(result: EventOf<'ToolResult'>): string | undefined {
  const data = result.data as { agentId?: unknown } | undefined;
  if (typeof data?.agentId === 'string') return data.agentId;
  return /^Spawned subagent (\S+)/.exec(result.text)?.[1];
}

/** The child and text of a `send_instruction` call, when both are strings. */
export function instructionOf(call: CutOffCall): { readonly to: string; readonly text: string } | undefined {
  const to = stringOf(call.args.agentId);
  const text = stringOf(call.args.text);
  return to === undefined || text === undefined ? undefined : { to, text };
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The child each cut-off `spawn_agent` call started, among `starts` (journals naming the parent)
 * not already `known`: the one whose `spawnCallId` is the call's id; for a journal without
 * `spawnCallId`, the first one with the call's `agent` and `task`. Calls with no child are left out.
 */
export function cutOffChildren(
  cutOff: readonly CutOffCall[],
  starts: readonly ChildStart[],
  known: ReadonlySet<string>,
): { readonly call: CutOffCall; readonly started: ChildStart }[] {
  const free = starts.filter((started) => !known.has(started.agentId));
  const claimed = new Set<string>();
  const found: { call: CutOffCall; started: ChildStart }[] = [];
  for (const call of cutOff) {
    const started =
      free.find((s) => !claimed.has(s.agentId) && s.spawnCallId === call.callId) ??
      free.find(
        (s) =>
          !claimed.has(s.agentId) &&
          s.spawnCallId === undefined &&
          s.agent !== undefined &&
          s.agent === call.args.agent &&
          s.task === call.args.task,
      );
    if (started === undefined) continue;
    claimed.add(started.agentId);
    found.push({ call, started });
  }
  return found;
}

/**
 * The agents a resumed parent's adoption takes, of those whose journals name it (`starts`): the
 * children its `spawn_agent` results name, and the children of its cut-off calls among `starts`
 * ({@link cutOffChildren}). `events` is its journal. An unfinished one among `starts` that is not
 * taken is an orphan: the Supervisor's adoption and `troupe resume` (src/run-dir/resume-plan.ts)
 * both end it ({@link orphanOutcome}).
 */
export function adoptedChildren(events: readonly AuditEvent[], starts: readonly ChildStart[]): Set<string> {
  const taken = new Set(spawnedChildren(events).map((child) => child.agentId));
  const cutOff = parentJournal(events)?.cutOffSpawns ?? [];
  for (const { started } of cutOffChildren(cutOff, starts, taken)) taken.add(started.agentId);
  return taken;
}

/**
 * The outcome of a resumed tree's descendant that nothing runs or awaits any more (its parent had
 * ended, or is such an orphan itself) while its journal does not end: `Failed(cancelled)`, with
 * `error.fields.parentId`. `troupe resume` and a resumed parent's adoption end it the same way.
 */
export function orphanOutcome(agentId: string, parentId: string): AgentOutcome {
  const error = cancelledError(
    `its parent ${parentId} had ended, so nothing would await it, and it was stopped before it ended; a resume does not run it again`,
  );
  return failedOutcome(agentId, 'cancelled', { ...error, fields: { ...error.fields, parentId } });
}

/** `process.emitWarning` code of a search for a resumed parent's children that left journals unread. */
export const ADOPTION_SCAN_WARNING_CODE = 'TROUPE_ADOPTION_SCAN_INCOMPLETE';

/**
 * Says which journals the searches of one resume of `parentId` (for its children and its finished
 * descendants') did not examine (past their bounds) and no earlier resume in the same supervisor
 * named, each named once: a child among them is neither adopted nor ended, and its cut-off call is
 * recorded as interrupted.
 */
export function warnNotExamined(parentId: string, names: readonly string[]): void {
  const shown = names.slice(0, 5).join(', ');
  process.emitWarning(
    `Resuming ${parentId}: ${names.length} journal(s) were not examined for its children or its finished descendants' (of cut-off spawn_agent calls, or unfinished ones not adopted, to end) (past ${MAX_ADOPTION_SCAN_JOURNALS} journals, or whose ids lie past ${MAX_STARTED_HEAD_BYTES} bytes): ${shown}${names.length > 5 ? ', ...' : ''}. A child among them is neither adopted nor ended, and its call is recorded as interrupted.`,
    { type: 'TroupeWarning', code: ADOPTION_SCAN_WARNING_CODE },
  );
}

/** The text `spawn_agent` answers for a child it started (as orchestration.ts words it). */
export function spawnedOutcome(
  agentId: string,
  agent: string,
): {
  ok: true;
  text: string;
  data: { agentId: string };
} {
  return { ok: true, text: `Spawned subagent ${agentId} (${agent}).`, data: { agentId } };
}

/** One instruction delivered again to a resumed child, at its place in the list. */
export interface Redelivery {
  readonly text: string;
  /** The parent's call that sent it (`SentInstruction.callSeq`): absent for one it had received. */
  readonly callSeq?: number;
}

/**
 * The instructions to deliver again to a resumed child, in index order: the ones its journal says
 * it received (`Instructed`, at their indices), then those of `sent` (its parent's, in send order)
 * it had not read. A sent instruction was read when the child received it at the index its
 * `send_instruction` result recorded, or at the index an earlier adoption delivered it at again
 * (the child's `Resumed.instructionIndices`): keyed, so instructions others sent the child between
 * (a program's `handle.send`, even of the same text) shift nothing, across any number of resumes.
 * One the child has no instruction at that index for was not read, when every resume of the child
 * recorded the instructions it moved; otherwise (a journal of an earlier troupe), and for one
 * without an index (an older journal, a cut-off call) or whose index holds another text, it was
 * read when the child received the same text at an index no other sent instruction accounts for.
 * Each is delivered once. The caller records where each unread one lands
 * ({@link movedInstructions}).
 */
export function redeliveries(
  childEvents: readonly AuditEvent[],
  sent: readonly SentInstruction[],
): Redelivery[] {
  const received: string[] = [];
  const moved = new Map<number, number>();
  let recorded = true;
  for (const event of childEvents) {
    if (event.type === 'Instructed') received[event.index] = event.text;
    if (event.type !== 'Resumed') continue;
    if (event.instructionIndices === undefined) recorded = false;
    for (const { callSeq, index } of event.instructionIndices ?? []) moved.set(callSeq, index);
  }
  const texts: Redelivery[] = [];
  // A gap (an index the journal does not hold) ends what can be delivered in order.
  for (const text of received) {
    if (text === undefined) break;
    texts.push({ text });
  }
  const claimed = new Set<number>();
  const unread: SentInstruction[] = [];
  const unkeyed: SentInstruction[] = [];
  for (const instruction of sent) {
    const at =
      (instruction.callSeq === undefined ? undefined : moved.get(instruction.callSeq)) ?? instruction.index;
    if (at !== undefined && received[at] === instruction.text && !claimed.has(at)) claimed.add(at);
    else if (at !== undefined && recorded && received[at] === undefined) unread.push(instruction);
    else unkeyed.push(instruction);
  }
  for (const instruction of unkeyed) {
    const at = received.findIndex((other, index) => other === instruction.text && !claimed.has(index));
    if (at >= 0) claimed.add(at);
    else unread.push(instruction);
  }
  // In send order, as the parent sent them.
  const order = new Map(sent.map((instruction, i) => [instruction, i]));
  unread.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  return [
    ...texts,
    ...unread.map(({ text, callSeq }) => (callSeq === undefined ? { text } : { text, callSeq })),
  ];
}

/** The texts of {@link redeliveries}. */
export function instructionsFor(
  childEvents: readonly AuditEvent[],
  sent: readonly SentInstruction[],
): string[] {
  return redeliveries(childEvents, sent).map(({ text }) => text);
}

/**
 * What a resumed child's Resumed event records of `delivered` ({@link redeliveries}, delivered at
 * their places): each of its parent's instructions delivered again, with the index it now has
 * (whether or not it moved: the newest record of a call is the one that holds).
 */
export function movedInstructions(delivered: readonly Redelivery[]): InstructionIndex[] {
  const moved: InstructionIndex[] = [];
  delivered.forEach(({ callSeq }, index) => {
    if (callSeq !== undefined) moved.push({ callSeq, index });
  });
  return moved;
}
