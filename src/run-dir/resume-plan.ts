/**
 * What `troupe resume` does with each plan entry of an interrupted run. Its current attempt is its
 * newest journal (`<id>-r<n>`) or result line, whichever is later: a retry with no line yet (a
 * `--retry-failed` session killed mid-retry) is the current attempt even though the line of the
 * attempt it retried is final, and is finished (resumed, or its line taken from its journal)
 * whether or not `retry` is given.
 * - its last result is final (completed, or failed for a reason other than cancelled): keep it;
 * - its current attempt has no result line but a journal that ends in Completed or Failed (the
 *   command died after the agent ended and before the line was written): take the outcome from
 *   the journal without running anything;
 * - its current attempt has a journal that does not end: resume the agent from it, same id;
 * - its last result is Failed(cancelled): run a new attempt (`<id>-r<n>`), whose journal starts afresh,
 *   or, when the cancelled attempt was a retry (its journal a fork of an earlier failed attempt's),
 *   whose journal is a fork of that failed attempt's again: it starts where the cancelled one did;
 * - with `retry` (`--retry-failed`), its last result is Failed for a reason `retry` names: run a new
 *   attempt whose journal is a fork of the failed one's (src/journal/fork.ts): it continues where the
 *   failed attempt stopped, and the tool calls that attempt finished are not run again;
 * - it never started: start it.
 *
 * Agents spawned by agents (at any depth) are not plan entries: one whose journal ends but has no
 * result line (a SIGKILL between the two writes) gets its line from its journal too. A parent
 * resumed later adopts it as finished and says nothing of it, so nothing else would write it. One
 * whose journal does not end under a parent that will not run again (the parent ended, or is such
 * an orphan itself), or that runs again but will not adopt it (its journal neither names it nor
 * shows the cut-off call that started it), is an orphan: nothing would resume or await it, so
 * {@link endOrphans} ends its journal `Failed(cancelled)` and gives its line. Judge journals, in
 * the same directory, are no agent's children and get none.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_ADOPTION_SCAN_BYTES, MAX_STARTED_HEAD_BYTES } from '../constants.ts';
import { type ChildStart, childStartOf } from '../engines/engine.ts';
import type { AuditEvent, EventOf } from '../journal/events.ts';
import { forkedInputs, forkedTotals, forkOrigins, startsAsForkOf } from '../journal/fork.ts';
import { readFirstEvent, readJournal } from '../journal/reader.ts';
import { resumeState } from '../journal/resume.ts';
import { readStartedHead, type StartedHead } from '../journal/started-head.ts';
import { knownCost } from '../journal/usage.ts';
import { JournalWriter } from '../journal/writer.ts';
import type { FailureReason } from '../loop/types.ts';
import { adoptedChildren, orphanOutcome } from '../supervisor/adoption.ts';
import type { ResumeLine } from './result-store.ts';
import { metadataMember, needsRerun, type ResultLine } from './results.ts';
import { journalFile, type RunDirPaths } from './run-dir.ts';
import { agentIdFor, type RunPlan } from './run-plan.ts';
import type { WorkItem } from './session.ts';

/** The resume decision for every plan entry. */
export interface ResumePlan {
  /** Entries to run (resumed from a journal, or started). */
  readonly work: WorkItem[];
  /**
   * Outcomes recovered from journals, to append to `results.jsonl` before running anything: plan
   * entries' first, then agents spawned by agents (`index: null`), oldest end first.
   */
  readonly recovered: ResultLine[];
  /**
   * Agents spawned by agents that never finished and will not run again: {@link endOrphans} ends
   * their journals and gives their lines, to append after `recovered`.
   */
  readonly orphans: Orphan[];
  /**
   * Journals not examined for nested agents (whose ids lie past MAX_STARTED_HEAD_BYTES of their
   * first line): a nested agent among them gets no line and is not ended. To be said.
   */
  readonly notExamined: string[];
  /** Entries whose result is final. */
  readonly kept: number;
  /** Failed entries run again from their journals (`retry`). */
  readonly retried: number;
}

/** Options of {@link planResume}. */
export interface ResumeOptions {
  /** Failed entries to run again from their journals: those failed for one of these reasons. */
  readonly retry?: ReadonlySet<FailureReason>;
}

/** Decides what to do with every plan entry of the run in `paths`. */
export function planResume(
  plan: RunPlan,
  paths: RunDirPaths,
  results: Iterable<ResumeLine>,
  options: ResumeOptions = {},
): ResumePlan {
  // Indexed once: scanning every result line and journal name for every entry made resuming a
  // 20,000-task run cost ~25 s of CPU before anything ran (quadratic in the data set).
  const files = existsSync(paths.journals) ? readdirSync(paths.journals) : [];
  const attempts = journalAttemptsById(files);
  const linesByIndex = new Map<number, ResumeLine[]>();
  for (const line of results) {
    if (line.index === null) continue;
    const lines = linesByIndex.get(line.index);
    if (lines === undefined) linesByIndex.set(line.index, [line]);
    else lines.push(line);
  }
  const work: WorkItem[] = [];
  const recovered: ResultLine[] = [];
  /** The journals of the entries this session resumes: what their adoption will find in them. */
  const resumed = new Map<string, readonly AuditEvent[]>();
  let kept = 0;
  let retried = 0;
  for (const run of plan.runs) {
    const lines = linesByIndex.get(run.index) ?? [];
    const last = lines.at(-1);
    const attempt = Math.max(
      1,
      ...lines.map((line) => line.attempt),
      ...(attempts.get(agentIdFor(plan.idPrefix, run.index)) ?? []),
    );
    const agentId = agentIdFor(plan.idPrefix, run.index, attempt);
    // The newest journal is the entry's current attempt even when an older attempt's line is final:
    // a `--retry-failed` session killed mid-retry leaves `-r<n>` without a line, and a resume
    // without the flag must finish it (or take its outcome), not report the failure it retried.
    const unfinishedRetry =
      last !== undefined && last.attempt < attempt && !lines.some((line) => line.agentId === agentId);
    const asked =
      last?.status === 'failed' && last.reason !== undefined && options.retry?.has(last.reason)
        ? last.agentId
        : undefined;
    const retryOf = unfinishedRetry
      ? (asked ??
        forkedFrom(
          journalFile(paths, agentId),
          journalFile(paths, last.agentId),
          last.agentId,
          !needsRerun(last),
        ))
      : (asked ?? cancelledRetrySource(paths, lines));
    if (!needsRerun(last) && retryOf === undefined && !unfinishedRetry) {
      kept += 1;
      continue;
    }
    if (asked !== undefined) retried += 1;
    if (lines.some((line) => line.agentId === agentId)) {
      work.push({
        run,
        agentId: agentIdFor(plan.idPrefix, run.index, attempt + 1),
        attempt: attempt + 1,
        resume: false,
        ...(retryOf === undefined ? {} : { retryOf }),
      });
      continue;
    }
    const journal = journalFile(paths, agentId);
    const events = existsSync(journal) ? readJournal(journal).events : [];
    const ended =
      events.length > 0 ? lineFromJournal(run.index, run.agent, run.label, attempt, events) : undefined;
    const line =
      ended && last !== undefined ? withInherited(ended, events, journalFile(paths, last.agentId)) : ended;
    if (line) recovered.push(line);
    // A retry cut off earlier continues its own journal, or forks it if it was cut off before that.
    else {
      // A retry adopts as a first attempt does: from its own journal (a fork, and what it did since).
      if (events.length > 0) resumed.set(agentId, events);
      work.push({
        run,
        agentId,
        attempt,
        resume: events.length > 0,
        ...(retryOf === undefined ? {} : { retryOf }),
      });
    }
  }
  const running = new Set<string>();
  for (const item of work) {
    if (item.resume) running.add(item.agentId);
    if (item.retryOf !== undefined) running.add(item.retryOf);
    // A retry's adoption searches under every attempt its journal continues (Started.forkedFrom):
    // their children are left to it too, not ended as orphans of an attempt that does not run.
    const continued = item.resume ? item.agentId : item.retryOf;
    if (continued !== undefined)
      for (const id of forkOriginsOf(journalFile(paths, continued))) running.add(id);
  }
  const nested = nestedAgents(plan, paths, files, results, running, resumed);
  recovered.push(...nested.lines);
  return { work, recovered, orphans: nested.orphans, notExamined: nested.notExamined, kept, retried };
}

/**
 * Lines for the agents spawned by agents that have none, at any depth under a plan entry: those
 * whose journals end, and the orphans (see {@link Orphan}). Every journal in `files` that is neither
 * a plan entry's nor a judge's (by name) has the head of its first line read for its ids
 * (src/journal/started-head.ts: at most MAX_STARTED_HEAD_BYTES, however long the line, in constant
 * memory; a journal whose ids lie past that is `notExamined`), however many there are: only their
 * ids are kept, and the directory's listing is held already; those whose `parentId` chain
 * leads to a plan entry's agent are the nested agents. An unfinished one runs again only when its
 * parent does and that parent's adoption takes it (src/supervisor/adoption.ts: its `spawn_agent`
 * results name it, or it is the child of a cut-off call): `resumed` holds the journals of the plan
 * entries' agents this session resumes, and `running` every plan entry's agent it continues (a
 * retry's source included, whose children are left to it).
 */
function nestedAgents(
  plan: RunPlan,
  paths: RunDirPaths,
  files: readonly string[],
  results: Iterable<ResumeLine>,
  running: ReadonlySet<string>,
  resumed: ReadonlyMap<string, readonly AuditEvent[]>,
): { lines: ResultLine[]; orphans: Orphan[]; notExamined: string[] } {
  const prefix = plan.idPrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A plan entry's agent (`<prefix>-<index>`, `-r<n>` for later attempts) and its judges (`-judge-...`).
  const entry = new RegExp(`^${prefix}-(\\d+)(?:-r\\d+)?(-judge-.*)?$`);
  const isEntry = (agentId: string): boolean => {
    const match = entry.exec(agentId);
    return match?.[1] !== undefined && match[2] === undefined && Number(match[1]) < plan.runs.length;
  };
  const heads = new Map<string, StartedHead & { readonly parentId: string }>();
  const notExamined: string[] = [];
  // Every candidate, however many: each read is bounded (MAX_STARTED_HEAD_BYTES, and most heads end
  // in the first chunk), and only ids are kept, so a count bound would only leave subagents of a
  // large run without a line.
  for (const file of files) {
    if (!file.endsWith('.jsonl') || entry.test(file.slice(0, -6))) continue;
    const stem = file.slice(0, -'.jsonl'.length);
    const head = readStartedHead(join(paths.journals, file), MAX_STARTED_HEAD_BYTES);
    if (head === 'too_long') notExamined.push(join(paths.journals, file));
    // A judge's, or a plan entry's, names no parent.
    else if (head?.parentId !== undefined && head.agentId === stem)
      heads.set(stem, { ...head, parentId: head.parentId });
  }
  if (heads.size === 0) return { lines: [], orphans: [], notExamined };
  const written = new Set(Array.from(results, (line) => line.agentId));
  const underEntry = (agentId: string): boolean => {
    const seen = new Set<string>();
    for (
      let parent = heads.get(agentId)?.parentId;
      parent !== undefined;
      parent = heads.get(parent)?.parentId
    ) {
      if (isEntry(parent)) return true;
      if (seen.has(parent)) return false;
      seen.add(parent);
    }
    return false;
  };
  const lines: ResultLine[] = [];
  // Nested agents without a line whose journals do not end, with what they recorded.
  const open = new Map<string, readonly AuditEvent[]>();
  const starts = new Map<string, EventOf<'Started'>>();
  for (const agentId of heads.keys()) {
    if (written.has(agentId) || !underEntry(agentId)) continue;
    let events: readonly AuditEvent[];
    try {
      events = readJournal(journalFile(paths, agentId)).events;
    } catch {
      continue; // gone since the listing: nothing to recover
    }
    const started = events[0];
    if (started?.type !== 'Started') continue;
    starts.set(agentId, started);
    const line = lineFromJournal(null, started.definition.name, undefined, 1, events);
    if (line !== undefined) lines.push(line);
    else open.set(agentId, events);
  }
  lines.sort((a, b) => (a.endedAt < b.endedAt ? -1 : a.endedAt > b.endedAt ? 1 : 0));
  const adopted = adoptions(heads, starts);
  // An unfinished agent runs again only when its parent does and adopts it: a plan entry's agent
  // this session continues, or an unfinished nested agent that runs itself.
  const runs = (agentId: string): boolean => {
    const seen = new Set<string>();
    for (let id: string = agentId; !seen.has(id); ) {
      seen.add(id);
      const parent = heads.get(id)?.parentId;
      if (parent === undefined) return false;
      const events = resumed.get(parent) ?? open.get(parent);
      if (events !== undefined && !adopted(parent, events).has(id)) return false;
      if (isEntry(parent)) return running.has(parent);
      if (!open.has(parent)) return false;
      id = parent;
    }
    return false;
  };
  const orphans: Orphan[] = [];
  for (const [agentId, events] of open) {
    const started = starts.get(agentId);
    if (started?.parentId === undefined || runs(agentId)) continue;
    orphans.push({ agentId, parentId: started.parentId, agent: started.definition.name, events });
  }
  return { lines, orphans, notExamined };
}

/**
 * The children a resumed parent's adoption takes, as src/supervisor/adoption.ts finds them: those
 * its `spawn_agent` results name, and the children of its cut-off calls among the journals that
 * name it (`heads`, with the `Started` events read in full in `starts`). Memoised by parent.
 */
function adoptions(
  heads: ReadonlyMap<string, StartedHead & { readonly parentId: string }>,
  starts: ReadonlyMap<string, EventOf<'Started'>>,
): (parentId: string, events: readonly AuditEvent[]) => ReadonlySet<string> {
  const byParent = new Map<string, ChildStart[]>();
  for (const head of heads.values()) {
    const started = starts.get(head.agentId);
    const child = childStartOf(head.agentId, head.spawnCallId, started?.definition.name, started?.task);
    const list = byParent.get(head.parentId);
    if (list === undefined) byParent.set(head.parentId, [child]);
    else list.push(child);
  }
  const memo = new Map<string, ReadonlySet<string>>();
  return (parentId, events) => {
    const known = memo.get(parentId);
    if (known !== undefined) return known;
    const taken = adoptedChildren(events, byParent.get(parentId) ?? []);
    memo.set(parentId, taken);
    return taken;
  };
}

/**
 * An agent spawned by an agent whose journal does not end, under a parent that will not run again
 * (it ended, or it is such an orphan itself): nothing would resume or await it.
 */
export interface Orphan {
  readonly agentId: string;
  readonly parentId: string;
  readonly agent: string;
  /** Its journal as read. */
  readonly events: readonly AuditEvent[];
}

/**
 * Ends each orphan's journal with `Failed(cancelled)` (error code `cancelled`, `fields.parentId`)
 * carrying the totals its journal records, through the journal's writer (its chain goes on, so it
 * still verifies), and returns their result lines (`recoveredFrom: "journal"`), as an agent that a
 * supervisor cancelled because its parent ended would have them. One whose journal cannot be
 * appended to (damaged) is left as it is and gets no line.
 */
export function endOrphans(paths: RunDirPaths, orphans: readonly Orphan[]): ResultLine[] {
  const lines: ResultLine[] = [];
  for (const orphan of orphans) {
    let totals: ReturnType<typeof resumeState>;
    try {
      totals = resumeState(orphan.events);
    } catch {
      continue;
    }
    const ending = orphanOutcome(orphan.agentId, orphan.parentId);
    if (ending.status !== 'failed') continue;
    let writer: JournalWriter | undefined;
    let failed: AuditEvent;
    try {
      writer = JournalWriter.open(journalFile(paths, orphan.agentId));
      failed = writer.appendEvent({
        type: 'Failed',
        agentId: orphan.agentId,
        reason: ending.reason,
        error: ending.error,
        usage: totals.totals.usage,
        costUsd: knownCost(totals.totals),
        rounds: totals.roundsUsed,
        steps: totals.stepsUsed,
      });
    } catch {
      continue;
    } finally {
      writer?.close();
    }
    const line = lineFromJournal(null, orphan.agent, undefined, 1, [...orphan.events, failed]);
    if (line !== undefined) lines.push(line);
  }
  return lines;
}

/**
 * `line` (recovered from `events`) with what it inherited when its journal is a retry's fork of the
 * earlier attempt's at `earlier` (as the Supervisor says on an outcome it sees end): a fork keeps
 * each copied event's time, so its first event is the earlier attempt's own.
 */
function withInherited(line: ResultLine, events: readonly AuditEvent[], earlier: string): ResultLine {
  if (line.inherited !== undefined || !existsSync(earlier)) return line;
  const from = readJournal(earlier).events;
  const first = from[0];
  if (first === undefined || first.ts !== events[0]?.ts || first.type !== events[0]?.type) return line;
  const forked = forkedTotals(forkedInputs(from, line.agentId));
  if (forked.requests === 0) return line;
  return { ...line, inherited: { usage: forked.usage, costUsd: knownCost(forked) } };
}

/** The attempts the journal at `path` was forked from (`Started.forkedFrom`); none when unreadable. */
function forkOriginsOf(path: string): readonly string[] {
  try {
    return existsSync(path) ? forkOrigins(readFirstEvent(path, MAX_ADOPTION_SCAN_BYTES)) : [];
  } catch {
    return [];
  }
}

/**
 * `earlierId` when the journal at `path` is a retry's fork of the one at `earlier` (its first event
 * is the earlier attempt's own, time included), or, with `emptyIsFork` (the earlier attempt's line
 * is final, so only a retry follows it), holds nothing yet (the Supervisor forks it when it runs);
 * undefined otherwise (or when the earlier one is unreadable).
 */
function forkedFrom(
  path: string,
  earlier: string,
  earlierId: string,
  emptyIsFork: boolean,
): string | undefined {
  try {
    if (!existsSync(earlier)) return undefined;
    const from = readFirstEvent(earlier, MAX_ADOPTION_SCAN_BYTES);
    if (from === undefined) return undefined;
    const first = readFirstEvent(path, MAX_ADOPTION_SCAN_BYTES);
    if (first === undefined) return emptyIsFork && statSync(path).size === 0 ? earlierId : undefined;
    return startsAsForkOf(first, from) ? earlierId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * When the last of `lines` (an entry's, oldest first) is a retry that ended `Failed(cancelled)` (a
 * Ctrl-C during `troupe resume --retry-failed`): the attempt it retried, the newest earlier one
 * whose line is final and whose journal the cancelled one's is a fork of (or that holds nothing
 * yet: only a retry follows a final line). The next attempt retries
 * that one again, as the next attempt after a cancelled first attempt starts where that one
 * started; undefined otherwise.
 */
function cancelledRetrySource(paths: RunDirPaths, lines: readonly ResumeLine[]): string | undefined {
  const last = lines.at(-1);
  if (last === undefined || last.status !== 'failed' || last.reason !== 'cancelled') return undefined;
  const source = lines.findLast((line) => line.attempt < last.attempt && !needsRerun(line));
  if (source === undefined) return undefined;
  return forkedFrom(
    journalFile(paths, last.agentId),
    journalFile(paths, source.agentId),
    source.agentId,
    true,
  );
}

/**
 * Attempt numbers of the journals in `files`, by the agent id of the entry's first attempt:
 * `<base>.jsonl` is attempt 1, `<base>-r<n>.jsonl` attempt n.
 */
function journalAttemptsById(files: readonly string[]): Map<string, number[]> {
  const attempts = new Map<string, number[]>();
  const add = (baseId: string, attempt: number): void => {
    const list = attempts.get(baseId);
    if (list === undefined) attempts.set(baseId, [attempt]);
    else list.push(attempt);
  };
  for (const file of files) {
    if (!file.endsWith('.jsonl')) continue;
    const stem = file.slice(0, -'.jsonl'.length);
    add(stem, 1);
    const rerun = /^(.+)-r(\d+)$/.exec(stem);
    if (rerun?.[1] !== undefined && rerun[2] !== undefined) add(rerun[1], Number(rerun[2]));
  }
  return attempts;
}

/** The result line of an agent whose journal ends in Completed or Failed; undefined when it does not end. */
export function lineFromJournal(
  index: number | null,
  agent: string,
  label: string | undefined,
  attempt: number,
  events: readonly AuditEvent[],
): ResultLine | undefined {
  const last = events.findLast((event) => event.type === 'Completed' || event.type === 'Failed');
  if (last === undefined || (last.type !== 'Completed' && last.type !== 'Failed')) return undefined;
  const first = events[0];
  const common = {
    index,
    agentId: last.agentId,
    parentId: first?.type === 'Started' ? (first.parentId ?? null) : null,
    agent,
    attempt,
    ...(label === undefined ? {} : { label }),
    ...metadataMember(first?.type === 'Started' ? first.metadata : undefined),
  };
  const tail = {
    usage: last.usage,
    costUsd: last.costUsd,
    rounds: last.rounds,
    ...(last.steps === undefined ? {} : { steps: last.steps }),
    hostId: null,
    restarts: 0,
    startedAt: first?.ts ?? null,
    endedAt: last.ts,
    recoveredFrom: 'journal' as const,
    ...(last.replay === undefined ? {} : { replay: last.replay }),
  };
  return last.type === 'Completed'
    ? {
        ...common,
        status: 'completed',
        ...(last.result === undefined ? {} : { result: last.result }),
        answer: last.answer,
        ...tail,
      }
    : { ...common, status: 'failed', reason: last.reason, error: last.error, ...tail };
}
