/**
 * The report's view of a run: every agent (finished, interrupted or never run) with its transcript
 * and the spans of its time on a common clock (model requests with their queueing and retry
 * backoffs, tool calls, waits for instructions, time down after a thread crash), and the run's own
 * events (sessions, thread crashes, provider pauses). Offset 0 is the run's first event, so the
 * start-up before the first agent shows.
 */
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_ADOPTION_SCAN_JOURNALS, MAX_STARTED_HEAD_BYTES } from '../constants.ts';
import type { AuditEvent } from '../journal/events.ts';
import { forkedInputs, forkedLength, forkedTotals, startsAsForkOf } from '../journal/fork.ts';
import { readFirstEvent, readFirstEventOrTooLong, readJournal } from '../journal/reader.ts';
import { readStartedHead } from '../journal/started-head.ts';
import { knownCost } from '../journal/usage.ts';
import { damageText, journalDamage } from '../journal/verify.ts';
import { ownSpend } from '../loop/outcome.ts';
import { addUsage } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import { LINE_EXCERPT_CHARS, REPORT_TASK_CHARS } from './constants.ts';
import { formatCost, formatTokenCount, sideEstimated } from './format.ts';
import type { ResultLine } from './results.ts';
import { journalFile, type RunDirContents } from './run-dir.ts';
import type { RunLogEvent } from './run-log.ts';
import { agentIdFor } from './run-plan.ts';
import type { Unended } from './summary.ts';
import { type RowReader, rowReader } from './task-rows.ts';
import { buildTranscript, type Transcript, transcriptEntries } from './transcript.ts';

/** A stretch of an agent's time, in ms since the run's first event. */
export interface Span {
  /**
   * `model`: a model request (step), from its InferenceSubmitted to its receipt; `queued`: waiting
   * for a provider slot inside it; `backoff`: sleeping before a retry; `tool`: a tool call; `wait`:
   * parked in `wait_for_instruction`; `down`: not running between a thread crash and the restart.
   */
  readonly kind: 'model' | 'queued' | 'backoff' | 'tool' | 'wait' | 'down';
  readonly start: number;
  readonly end: number;
  /** Tool name, `round R, step S`, the instruction received, the retried error... */
  readonly label: string;
  /** For tools: whether the call succeeded (undefined: no result, e.g. interrupted). */
  readonly ok?: boolean;
  /** Extra text for the tooltip. */
  readonly detail?: string;
}

/** A point in an agent's time: a retried request, a restart. */
export interface Marker {
  readonly kind: 'retry' | 'restart';
  readonly at: number;
  readonly label: string;
}

/**
 * What a retry's journal holds of the attempt it continues (`troupe resume --retry-failed`): the
 * retry's journal starts as a copy of that attempt's events, each at its original time
 * (src/journal/fork.ts), which the report shows on that attempt's row and counts with it.
 */
export interface InheritedPart {
  /** The attempt it continues. */
  readonly agentId: string;
  /** Rounds, model requests, tool calls and provider retries of the copied events. */
  readonly rounds: number;
  readonly steps: number;
  readonly toolCalls: number;
  readonly retries: number;
  /** Resumed events among the copied ones: restarts of the attempt it continues. */
  readonly restarts: number;
  /** What the copied receipts add up to (`ResultLine.inherited` when the retry has a line). */
  readonly usage: Usage;
  /** USD; null when unknown. */
  readonly costUsd: number | null;
}

/** One agent of the report. */
export interface ReportAgent {
  readonly agentId: string;
  readonly index: number | null;
  readonly parentId: string | null;
  readonly agent: string;
  /** The plan's `id` for this run (data-set item id), when it has one. */
  readonly label: string | undefined;
  readonly attempt: number;
  /** `interrupted`: started, never ended (the run was killed); `not run`: never started. */
  readonly status: 'completed' | 'failed' | 'interrupted' | 'not run';
  readonly reason?: string;
  readonly error?: string;
  readonly result?: ResultLine;
  /**
   * Without a result line, what its journal's outcome says (its answer, or `reason: message`), its
   * first 400 characters: the terminal report's RESULT column, kept when its row is built so the
   * report need not build its transcript again (a killed 5,000-agent run rebuilt every one).
   * Absent with a result line, or when its journal has no outcome.
   */
  readonly outcomeExcerpt?: string;
  /**
   * Its task's first REPORT_TASK_CHARS characters (then `…`): a report of 20,000 entries held
   * every task whole. Whole with `TimelineOptions.wholeTasks` (`troupe show`).
   */
  readonly task: string;
  /** The model it ran with (from its journal); undefined when it never started. */
  readonly model: string | undefined;
  /** The thread it last ran on; null when unknown. */
  readonly hostId: number | null;
  /** Every thread it ran on, in order (from `events.jsonl`; empty when the run has no log). */
  readonly hostIds: readonly number[];
  readonly restarts: number;
  readonly usage: Usage;
  /** USD; null when unknown. */
  readonly costUsd: number | null;
  /**
   * Its whole history, as its result line says: a retry's include what it inherited (`inherited`).
   */
  readonly rounds: number;
  readonly steps: number;
  readonly toolCalls: number;
  readonly retries: number;
  /**
   * A retry whose journal is a fork of the attempt it continues: what it copied from it. Its
   * `start`, spans, markers and round starts are its own attempt's only (from the first event after
   * the copy, its Resumed).
   */
  readonly inherited?: InheritedPart;
  /**
   * Offsets in ms since the run's first event; undefined without a journal. A retry's `start` is
   * where its own attempt starts (see `inherited`).
   */
  readonly start?: number;
  readonly end?: number;
  /** Its timeline's spans; these, `markers` and `roundStarts` are empty with `TimelineOptions.spans: false`. */
  readonly spans: readonly Span[];
  readonly markers: readonly Marker[];
  /** Round starts (ms offsets). */
  readonly roundStarts: readonly number[];
  /**
   * Its journal as a transcript; undefined when it has no journal. A run directory's timeline
   * builds it from the journal when first read (and keeps it): the report reads only those it shows.
   */
  readonly transcript: Transcript | undefined;
  /**
   * What is wrong with its journal (`line 5: ...`, see `journalDamage`): a line that is not an
   * event, or a broken hash chain. Its figures and transcript then leave out what was lost or may
   * show what was edited. Absent when the journal is intact (or there is none).
   */
  readonly damage?: string;
}

/** A run-level event on the timeline (ms offsets). */
export type RunMark =
  | {
      readonly kind: 'session';
      readonly start: number;
      readonly end: number | undefined;
      readonly label: string;
    }
  | { readonly kind: 'backoff'; readonly start: number; readonly end: number; readonly label: string }
  | { readonly kind: 'crash'; readonly at: number; readonly hostId: number; readonly label: string }
  | { readonly kind: 'respawn'; readonly at: number; readonly hostId: number; readonly label: string };

/** Every agent of a run and the run's time range. */
export interface Timeline {
  /** Epoch ms of offset 0: the run's first event. */
  readonly origin: number;
  /** Milliseconds from the first to the last event. */
  readonly duration: number;
  readonly agents: readonly ReportAgent[];
  readonly marks: readonly RunMark[];
  /**
   * The timeline of a run directory, whose totals count result lines (see {@link countedAgents});
   * false for one journal's, whose agent has none.
   */
  readonly runDir: boolean;
}

/** Options of {@link buildTimeline}. */
export interface TimelineOptions {
  /** Rebuild every round's input (the HTML report shows them). @default false */
  readonly inputs?: boolean;
  /**
   * Keep each agent's whole task (`troupe show`), not its first REPORT_TASK_CHARS characters.
   * @default false
   */
  readonly wholeTasks?: boolean;
  /**
   * Keep each agent's spans, markers and round starts, which only the HTML report's timeline draws.
   * `false` (the terminal and JSON reports): every agent's are empty, so a report of 100,000 agents
   * does not hold a span object, label and detail string for each of their model requests and tool
   * calls. A number N: those of the first N agents in the timeline's order only (the HTML report
   * draws the first REPORT_TIMELINE_MAX_AGENTS): each one's journal is read again for them once the
   * order is known; the others' are empty. @default true
   */
  readonly spans?: boolean | number;
  /**
   * Build the timeline of one agent only (`troupe show RUN_DIR AGENT`): called with every agent the
   * run directory names without opening a journal (its result lines, plan entries, attempts with a
   * journal and no line, and journal files, as spawned agents), ordered by plan index then attempt;
   * returns the id of the one to build. Only its journal (and, for a retry, the attempt it
   * continues) is read. May throw (an unknown agent). @default every agent
   */
  readonly select?: (agents: readonly AgentRef[]) => string;
  /**
   * Bytes one journal line may hold (`troupe show --max-line-bytes`): a longer one fails with
   * UserError `journal_line_too_long`. @default MAX_JOURNAL_LINE_BYTES (64 MiB)
   */
  readonly maxLineBytes?: number;
}

/** An agent a run directory names, as {@link TimelineOptions.select} sees it. */
export interface AgentRef {
  readonly agentId: string;
  readonly index: number | null;
  readonly label: string | undefined;
  readonly attempt: number;
}

/** Options of {@link journalTimeline}. */
export interface JournalTimelineOptions extends TimelineOptions {
  /** What is wrong with the journal the events come from (`ReportAgent.damage`). */
  readonly damage?: string;
}

interface Entry {
  readonly agentId: string;
  readonly line?: ResultLine;
  readonly index: number | null;
  readonly agent: string;
  readonly attempt: number;
  /** Its task, read when its row is built (a spawned agent's is in its journal). */
  readonly task: () => string;
  readonly label: string | undefined;
  /** Found through its parent's journal (or its journal file): its own journal says what it is. */
  readonly spawned?: true;
}

function spawnedEntry(agentId: string): Entry {
  return {
    agentId,
    index: null,
    agent: 'unknown',
    attempt: 1,
    task: constant(''),
    label: undefined,
    spawned: true,
  };
}

/** An agent's row with its times from epoch 0, without its transcript; `journal`: it had one. */
type Row = Omit<ReportAgent, 'transcript'> & { readonly journal: boolean };

/**
 * `row` with its times from `origin`, and a `transcript` built (and kept) when first read: only
 * the agents whose transcript is shown or printed have theirs in memory.
 */
function shifted(
  { journal, ...row }: Row,
  origin: number,
  transcriptOf: (agentId: string) => Transcript | undefined,
): ReportAgent {
  let transcript: Transcript | undefined | null = journal ? null : undefined;
  // The getter holds the id only: holding `row` kept every agent's row alive beside its copy.
  const { agentId } = row;
  return {
    ...row,
    ...(row.start === undefined ? {} : { start: row.start - origin }),
    ...(row.end === undefined ? {} : { end: row.end - origin }),
    spans:
      row.spans.length === 0
        ? NONE
        : row.spans.map((span) => ({ ...span, start: span.start - origin, end: span.end - origin })),
    markers:
      row.markers.length === 0 ? NONE : row.markers.map((marker) => ({ ...marker, at: marker.at - origin })),
    roundStarts: row.roundStarts.length === 0 ? NONE : row.roundStarts.map((at) => at - origin),
    get transcript() {
      if (transcript === null) transcript = transcriptOf(agentId);
      return transcript;
    },
  };
}

/** A retry's journal split at the end of what it copied from the attempt it continues. */
interface Fork {
  /** What the copied events (the continued attempt's up to its end) hold. */
  readonly inherited: InheritedPart;
  /** Epoch ms of the first event after the copy (its Resumed); undefined when none follows yet. */
  readonly ownFrom: number | undefined;
}

/**
 * The start of `task`, at most REPORT_TASK_CHARS characters and `…`, as a string of its own: a
 * slice of a longer string keeps the whole of it in memory (V8 makes slices views of their parent).
 */
export function taskExcerpt(task: string): string {
  if (task.length <= REPORT_TASK_CHARS) return task;
  let end = REPORT_TASK_CHARS;
  const last = task.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return Buffer.from(`${task.slice(0, end)}…`, 'utf8').toString('utf8');
}

/**
 * The task of plan entry `run`; for a row that cannot be read from `tasks.jsonl` (damaged, or
 * edited since it was copied: `run_dir_io`, `tasks_changed`), why, so the report still shows the
 * rest of the run.
 */
function rowTask(rows: RowReader, run: RunDirContents['plan']['runs'][number]): string {
  try {
    return rows.inputsOf(run).task;
  } catch (error) {
    return `(task unreadable: ${error instanceof Error ? error.message : String(error)})`;
  }
}

/** Builds the timeline of a run directory from its results, journals and `events.jsonl`. */
export function buildTimeline(contents: RunDirContents, options: TimelineOptions = {}): Timeline {
  // One descriptor of tasks.jsonl for every row's task: 100,000 entries opened it 100,000 times.
  const taskRows = rowReader(contents.plan, contents.paths.root);
  try {
    return runTimeline(contents, options, taskRows);
  } finally {
    taskRows.close();
  }
}

function runTimeline(contents: RunDirContents, options: TimelineOptions, taskRows: RowReader): Timeline {
  const { plan, paths, results } = contents;
  const kept = options.wholeTasks === true ? (task: string) => task : taskExcerpt;
  const journals = new Map<string, readonly AuditEvent[]>();
  const damages = new Map<string, string>();
  const bound = options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes };
  const load = (agentId: string): readonly AuditEvent[] => {
    let events = journals.get(agentId);
    if (events === undefined) {
      const file = journalFile(paths, agentId);
      const contents = existsSync(file) ? readJournal(file, { hashes: true, ...bound }) : undefined;
      events = contents?.events ?? [];
      const damage = contents && journalDamage(contents);
      if (damage !== undefined) damages.set(agentId, damageText(damage));
      journals.set(agentId, events);
    }
    return events;
  };
  const entries: Entry[] = [];
  const seen = new Set<string>();
  const runs = new Map(plan.runs.map((run) => [run.index, run]));
  for (const line of results) {
    if (seen.has(line.agentId)) continue;
    seen.add(line.agentId);
    const run = line.index === null ? undefined : runs.get(line.index);
    entries.push({
      agentId: line.agentId,
      line,
      index: line.index,
      agent: line.agent,
      attempt: line.attempt,
      task: () => kept(run === undefined ? startedTask(load(line.agentId)) : rowTask(taskRows, run)),
      label: line.label ?? run?.label,
    });
  }
  // Sets, not scans: a scan of every result line for each of 20,000 plan entries (and of every entry
  // for each spawned child) made the report quadratic in the data set.
  const ran = new Set(results.map((line) => line.index));
  // An attempt with a journal and no line yet: a session killed while it ran (a `--retry-failed`
  // one leaves `<id>-r<n>` after the line of the attempt it retried). `troupe resume` finishes it.
  const lastLines = new Map<number, ResultLine>();
  for (const line of results)
    if (line.index !== null && (lastLines.get(line.index)?.attempt ?? 0) < line.attempt)
      lastLines.set(line.index, line);
  const files =
    lastLines.size > 0 && existsSync(paths.journals) ? new Set(readdirSync(paths.journals)) : undefined;
  for (const run of plan.runs) {
    const last = lastLines.get(run.index);
    if (last === undefined || files === undefined) continue;
    const agentId = agentIdFor(plan.idPrefix, run.index, last.attempt + 1);
    // Its first line only, at most MAX_STARTED_HEAD_BYTES: its row reads it whole when built.
    if (seen.has(agentId) || !files.has(`${agentId}.jsonl`) || !startsStarted(journalFile(paths, agentId)))
      continue;
    seen.add(agentId);
    entries.push({
      agentId,
      index: run.index,
      agent: run.agent,
      attempt: last.attempt + 1,
      task: () => kept(rowTask(taskRows, run)),
      label: run.label,
    });
  }
  for (const run of plan.runs) {
    if (ran.has(run.index)) continue;
    entries.push({
      agentId: run.agentId,
      index: run.index,
      agent: run.agent,
      attempt: 1,
      task: () => kept(rowTask(taskRows, run)),
      label: run.label,
    });
  }
  // One agent (`troupe show`): chosen among the names alone, then only its journals are read.
  let only: string | undefined;
  if (options.select !== undefined) {
    const refs: AgentRef[] = [...entries];
    if (existsSync(paths.journals))
      for (const file of readdirSync(paths.journals)) {
        const agentId = file.endsWith('.jsonl') ? file.slice(0, -'.jsonl'.length) : undefined;
        if (agentId === undefined || seen.has(agentId)) continue;
        refs.push({ agentId, index: null, label: undefined, attempt: 1 });
      }
    refs.sort(
      (a, b) =>
        (a.index ?? Number.MAX_SAFE_INTEGER) - (b.index ?? Number.MAX_SAFE_INTEGER) || a.attempt - b.attempt,
    );
    only = options.select(refs);
    const chosen = entries.find((entry) => entry.agentId === only);
    // Its earlier attempts stay until its fork is found: a retry's journal continues theirs.
    const index = chosen?.index ?? null;
    const attempts = entries.filter((entry) => entry === chosen || (index !== null && entry.index === index));
    entries.length = 0;
    entries.push(...attempts);
  }
  // Read for the forks and let go, not kept until each row is built: a killed run of 5,000 retries
  // held both journals of every one of them at once.
  const forks = retryForks(
    entries,
    (agentId) => journals.get(agentId) ?? readEvents(journalFile(paths, agentId), options.maxLineBytes),
  );
  if (only !== undefined) {
    const chosen = entries.find((entry) => entry.agentId === only);
    entries.length = 0;
    if (chosen !== undefined) entries.push(chosen);
  }
  const hosts = new Map<string, number[]>();
  for (const event of contents.events) {
    if (event.type !== 'agent') continue;
    const list = hosts.get(event.agentId) ?? [];
    list.push(event.hostId);
    hosts.set(event.agentId, list);
  }
  const starts = [
    Date.parse(plan.createdAt),
    ...contents.events.map((event) => Date.parse(event.ts)),
    ...(contents.summary?.sessions ?? []).map((session) => Date.parse(session.startedAt)),
  ];
  const ends = [
    ...contents.events.map((event) => Date.parse(event.ts)),
    ...(contents.summary?.sessions ?? []).map((session) => Date.parse(session.endedAt)),
  ];
  // Each agent's transcript is built once, without round inputs, for its row (times from epoch 0,
  // moved to the run's origin below) and its children, then let go: a report of 5,000 agents held
  // every transcript (with every round's input for the HTML) though the page shows at most
  // REPORT_TRANSCRIPT_MAX_AGENTS. `ReportAgent.transcript` builds an agent's again when asked.
  const rows: Row[] = [];
  const listed = new Set(entries.map((entry) => entry.agentId));
  // Agents spawned by agents whose parents were cut off before they ended have journals but no
  // result line: found through their parents' spawn results. One agent's timeline (`select`)
  // reads no other journal: a spawned agent chosen by its journal file is its only entry.
  if (only !== undefined && !listed.has(only)) entries.push(spawnedEntry(only));
  for (let i = 0; i < entries.length; i += 1) {
    let entry = entries[i] as Entry;
    // Its task first: a line's without a plan entry is read from its journal, loaded once.
    const task = entry.spawned === true ? '' : entry.task();
    const transcript = buildTranscript(load(entry.agentId));
    journals.delete(entry.agentId);
    if (entry.spawned === true) {
      if (transcript === undefined) continue;
      const spawnedTask = kept(transcript.task);
      entry = { ...entry, agent: transcript.definition.name, task: () => spawnedTask };
    } else entry = { ...entry, task: constant(task) };
    if (transcript?.startedAt !== undefined) starts.push(transcript.startedAt);
    if (transcript?.lastAt !== undefined) ends.push(transcript.lastAt);
    const agentId = entry.agentId;
    const { transcript: _own, ...row } = reportAgent(
      entry,
      transcript,
      0,
      hosts.get(agentId) ?? [],
      damages.get(agentId),
      forks.get(agentId),
      options.spans === undefined || options.spans === true,
    );
    rows.push({ ...row, journal: transcript !== undefined });
    if (only !== undefined) continue;
    for (const child of transcript?.children ?? []) {
      if (seen.has(child) || listed.has(child)) continue;
      seen.add(child);
      listed.add(child);
      entries.push(spawnedEntry(child));
    }
  }
  const origin = finiteMin(starts) ?? Date.now();
  const last = Math.max(origin, finiteMax(ends) ?? origin);
  const transcriptOf = (agentId: string): Transcript | undefined => {
    const file = journalFile(paths, agentId);
    return existsSync(file) ? buildTranscript(readJournal(file, bound).events, options) : undefined;
  };
  const inOrder = ordered(rows);
  rows.length = 0;
  if (typeof options.spans === 'number') {
    const byId = new Map(entries.map((entry) => [entry.agentId, entry]));
    const drawn = Math.min(inOrder.length, Math.max(0, options.spans));
    for (let i = 0; i < drawn; i += 1) {
      const row = inOrder[i] as Row;
      const entry = byId.get(row.agentId);
      if (!row.journal || entry === undefined) continue;
      const events = readEvents(journalFile(paths, row.agentId), options.maxLineBytes);
      const { spans, markers, roundStarts } = reportAgent(
        entry,
        buildTranscript(events),
        0,
        hosts.get(row.agentId) ?? [],
        undefined,
        forks.get(row.agentId),
      );
      inOrder[i] = { ...row, spans, markers, roundStarts };
    }
  }
  // Each row let go as its copy is made: every row was held beside its copy until the last was made.
  const agents = new Array<ReportAgent>(inOrder.length);
  for (let i = inOrder.length - 1; i >= 0; i -= 1)
    agents[i] = shifted(inOrder.pop() as Row, origin, transcriptOf);
  return { origin, duration: last - origin, agents, marks: runMarks(contents.events, origin), runDir: true };
}

/** The timeline of one agent's journal (`troupe report JOURNAL`). */
export function journalTimeline(
  events: readonly AuditEvent[],
  options: JournalTimelineOptions = {},
): Timeline {
  const transcript = buildTranscript(events, options);
  const origin = transcript?.startedAt ?? Date.now();
  const entry: Entry = {
    agentId: transcript?.agentId ?? events[0]?.agentId ?? 'unknown',
    index: null,
    agent: transcript?.definition.name ?? 'unknown',
    attempt: 1,
    task: () => transcript?.task ?? '',
    label: undefined,
  };
  const agent = reportAgent(entry, transcript, origin, [], options.damage);
  return {
    origin,
    duration: Math.max(0, (transcript?.lastAt ?? origin) - origin),
    agents: [agent],
    marks: [],
    runDir: false,
  };
}

/**
 * The retries among `entries` whose journals are forks of the attempts they continue (each plan
 * entry's latest earlier attempt): a fork keeps each copied event's time, so its first event is
 * the earlier attempt's own, and it copies the earlier attempt's events up to its end. The first
 * event after them is the Resumed the retry wrote when it started from the copy.
 */
function retryForks(
  entries: readonly Entry[],
  load: (agentId: string) => readonly AuditEvent[],
): Map<string, Fork> {
  const byIndex = new Map<number, Entry[]>();
  for (const entry of entries) {
    if (entry.index === null) continue;
    const attempts = byIndex.get(entry.index);
    if (attempts === undefined) byIndex.set(entry.index, [entry]);
    else attempts.push(entry);
  }
  const forks = new Map<string, Fork>();
  for (const attempts of byIndex.values()) {
    if (attempts.length < 2) continue;
    for (const entry of attempts) {
      let earlier: Entry | undefined;
      for (const other of attempts)
        if (other.attempt < entry.attempt && (earlier === undefined || other.attempt > earlier.attempt))
          earlier = other;
      if (earlier === undefined) continue;
      const from = load(earlier.agentId);
      const events = load(entry.agentId);
      if (!startsAsForkOf(events[0], from[0])) continue;
      const copied = Math.min(events.length, forkedLength(from));
      const own = events[copied];
      forks.set(entry.agentId, {
        // Only what they add up to is kept: the events need not stay in memory for the report.
        inherited: inheritedPart(earlier.agentId, events.slice(0, copied)),
        ownFrom: own === undefined ? undefined : Date.parse(own.ts),
      });
    }
  }
  return forks;
}

/** What the events a retry copied from attempt `agentId` hold (see {@link InheritedPart}). */
function inheritedPart(agentId: string, events: readonly AuditEvent[]): InheritedPart {
  const copied = buildTranscript(events);
  const totals = forkedTotals(forkedInputs(events, agentId));
  return {
    agentId,
    rounds: copied?.rounds.length ?? 0,
    steps: copied?.steps ?? 0,
    toolCalls: copied?.toolCalls ?? 0,
    retries: copied?.retries ?? 0,
    restarts: resumes(copied),
    usage: totals.usage,
    costUsd: knownCost(totals),
  };
}

// Loops, not Math.min(...values): spread into arguments, 200,000 values overflow the stack.
function finiteMin(values: readonly number[]): number | undefined {
  let min: number | undefined;
  for (const value of values) if (Number.isFinite(value) && (min === undefined || value < min)) min = value;
  return min;
}

function finiteMax(values: readonly number[]): number | undefined {
  let max: number | undefined;
  for (const value of values) if (Number.isFinite(value) && (max === undefined || value > max)) max = value;
  return max;
}

/** Plan entries by index (attempts in order), each followed by the agents it spawned. */
function ordered<A extends Pick<ReportAgent, 'agentId' | 'parentId' | 'index' | 'attempt'>>(
  agents: readonly A[],
): A[] {
  const children = new Map<string, A[]>();
  const ids = new Set(agents.map((agent) => agent.agentId));
  const roots: A[] = [];
  for (const agent of agents) {
    if (agent.parentId !== null && ids.has(agent.parentId)) {
      const list = children.get(agent.parentId) ?? [];
      list.push(agent);
      children.set(agent.parentId, list);
    } else roots.push(agent);
  }
  roots.sort(
    (a, b) =>
      (a.index ?? Number.MAX_SAFE_INTEGER) - (b.index ?? Number.MAX_SAFE_INTEGER) || a.attempt - b.attempt,
  );
  const out: A[] = [];
  const visit = (agent: A): void => {
    out.push(agent);
    for (const child of children.get(agent.agentId) ?? []) visit(child);
  };
  for (const root of roots) visit(root);
  return out;
}

/** Whether the journal at `path` starts with a `Started` event, reading its first line only. */
function startsStarted(path: string): boolean {
  return (
    readFirstEvent(path, MAX_STARTED_HEAD_BYTES, (line) => line.includes('"type":"Started"'))?.type ===
    'Started'
  );
}

/**
 * Whether the plan entry's attempt whose journal is at `path` started, for the unended count:
 * its first line (at most `maxHeadBytes` of it) is a `Started` event, or is longer than that and
 * whole (the file ends with a newline: a journal's first line is the `Started` its writer wrote
 * before anything else; a line cut off while written is no start, as a short one is not).
 */
function entryStarted(path: string, maxHeadBytes: number): boolean {
  const first = readFirstEventOrTooLong(path, maxHeadBytes, (line) => line.includes('"type":"Started"'));
  return first === 'too_long' ? endsWithNewline(path) : first?.type === 'Started';
}

/** Whether the file at `path` ends with a newline (reading its last byte); false when unreadable. */
function endsWithNewline(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return false;
  }
  try {
    const { size } = fstatSync(fd);
    const last = Buffer.alloc(1);
    return size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** The events of the journal at `path`; none when there is no such file. */
function readEvents(path: string, maxLineBytes?: number): readonly AuditEvent[] {
  if (!existsSync(path)) return [];
  return readJournal(path, maxLineBytes === undefined ? {} : { maxLineBytes }).events;
}

function constant(value: string): () => string {
  return () => value;
}

function startedTask(events: readonly AuditEvent[]): string {
  const first = events[0];
  return first?.type === 'Started' ? first.task : '';
}

function reportAgent(
  entry: Entry,
  transcript: Transcript | undefined,
  origin: number,
  hostIds: readonly number[],
  damage: string | undefined,
  fork?: Fork,
  drawn = true,
): ReportAgent {
  const { line } = entry;
  const spans: Span[] = [];
  const markers: Marker[] = [];
  const inherited = fork?.inherited;
  // A retry's own attempt starts after the events it copied (at their original times, on the row
  // of the attempt it continues); nothing of its own yet, it starts where they end.
  const ownFrom = fork === undefined ? undefined : (fork.ownFrom ?? transcript?.lastAt);
  const startedAt = ownFrom ?? transcript?.startedAt;
  const roundStarts = (drawn ? (transcript?.rounds ?? []) : [])
    .filter((round) => ownFrom === undefined || round.at >= ownFrom)
    .map((round) => round.at - origin);
  const start = startedAt === undefined ? undefined : startedAt - origin;
  const end = transcript?.lastAt === undefined ? undefined : transcript.lastAt - origin;
  if (drawn && transcript !== undefined && end !== undefined) {
    let lastAt = transcript.startedAt ?? origin;
    for (const item of transcriptEntries(transcript)) {
      const at = item.at - origin;
      // The copied events, and the Resumed the retry started with (no restart: its first event).
      if (ownFrom !== undefined && (item.at < ownFrom || (item.at === ownFrom && item.kind === 'resumed'))) {
        lastAt = Math.max(lastAt, 'end' in item && item.end !== undefined ? item.end : item.at);
        continue;
      }
      switch (item.kind) {
        case 'request': {
          const stop = (item.end ?? transcript.lastAt ?? item.at) - origin;
          const receipt = item.receipt;
          const label = `round ${item.round}${item.step === undefined ? '' : `, step ${item.step}`}`;
          const usage = receipt
            ? `${receipt.usage.inputTokens} in / ${receipt.usage.outputTokens} out${receipt.usage.estimated ? ` (${receipt.usage.estimatedSide === undefined ? '' : `${receipt.usage.estimatedSide} `}estimated)` : ''}`
            : 'no receipt: cut off';
          spans.push({
            kind: 'model',
            start: at,
            end: stop,
            label,
            detail: `${usage}${receipt && receipt.retries > 0 ? `, ${receipt.retries} retr${receipt.retries === 1 ? 'y' : 'ies'}` : ''}${item.errorCode ? `, failed: ${item.errorCode}` : ''}`,
          });
          if (receipt?.queuedMs !== undefined)
            spans.push({
              kind: 'queued',
              start: at,
              end: Math.min(stop, at + receipt.queuedMs),
              label,
              detail: `waited ${receipt.queuedMs} ms in all for a provider slot`,
            });
          for (const retry of receipt?.retryLog ?? []) {
            const failedAt = at + retry.atMs;
            markers.push({
              kind: 'retry',
              at: failedAt,
              label: `${label}: ${retry.code}${retry.status === undefined ? '' : ` (${retry.status})`}, retried after ${retry.delayMs} ms`,
            });
            spans.push({
              kind: 'backoff',
              start: failedAt,
              end: Math.min(stop, failedAt + retry.delayMs),
              label: `${retry.code}${retry.status === undefined ? '' : ` ${retry.status}`}`,
              detail: `backoff before retrying ${label}`,
            });
          }
          break;
        }
        case 'tool': {
          const stop = (item.end ?? transcript.lastAt ?? item.at) - origin;
          spans.push({
            kind: 'tool',
            start: at,
            end: stop,
            label: item.name,
            ...(item.result === undefined ? {} : { ok: item.result.ok }),
            ...(item.interrupted ? { detail: 'interrupted: its thread died' } : {}),
          });
          if (item.wait !== undefined)
            spans.push({
              kind: 'wait',
              start: item.wait.at - origin,
              end: (item.wait.instructedAt ?? item.end ?? transcript.lastAt ?? item.wait.at) - origin,
              label: item.wait.instruction ?? '(no instruction)',
            });
          break;
        }
        case 'resumed':
          spans.push({
            kind: 'down',
            start: lastAt - origin,
            end: at,
            label: 'not running: restarted from its journal',
          });
          markers.push({ kind: 'restart', at, label: `resumed at round ${item.nextRound}` });
          break;
        default:
          break;
      }
      lastAt = Math.max(lastAt, 'end' in item && item.end !== undefined ? item.end : item.at);
    }
  }
  const status: ReportAgent['status'] = line
    ? line.status
    : transcript?.outcome
      ? transcript.outcome.status
      : transcript !== undefined
        ? 'interrupted'
        : 'not run';
  const outcome = transcript?.outcome;
  const reason = line?.reason ?? outcome?.reason;
  const error = line?.error?.message ?? outcome?.error?.message;
  const outcomeExcerpt = line === undefined && outcome !== undefined ? outcomeLine(outcome) : undefined;
  return {
    agentId: entry.agentId,
    index: entry.index,
    parentId: line?.parentId ?? transcript?.parentId ?? null,
    agent: entry.agent,
    label: entry.label,
    attempt: entry.attempt,
    status,
    ...(reason === undefined ? {} : { reason }),
    ...(error === undefined ? {} : { error }),
    ...(line === undefined ? {} : { result: line }),
    ...(outcomeExcerpt === undefined ? {} : { outcomeExcerpt }),
    task: entry.task(),
    model: transcript?.model,
    hostId: line?.hostId ?? hostIds.at(-1) ?? null,
    hostIds,
    restarts: line?.restarts ?? ownResumes(transcript, inherited, fork?.ownFrom),
    usage: line?.usage ?? transcript?.usage ?? ZERO,
    costUsd: line ? line.costUsd : (transcript?.costUsd ?? 0),
    rounds: line?.rounds ?? outcome?.rounds ?? transcript?.rounds.length ?? 0,
    steps: line?.steps ?? transcript?.steps ?? 0,
    toolCalls: transcript?.toolCalls ?? 0,
    retries: transcript?.retries ?? 0,
    ...(inherited === undefined ? {} : { inherited }),
    ...(start === undefined ? {} : { start }),
    ...(end === undefined ? {} : { end }),
    spans,
    markers,
    roundStarts,
    transcript,
    ...(damage === undefined ? {} : { damage }),
  };
}

/**
 * An outcome's text (its answer, or `reason: message`), its first 4 × LINE_EXCERPT_CHARS
 * characters as a string of its own (not a view of a megabyte answer): enough for the terminal
 * report's one-line excerpt once runs of whitespace are collapsed. Cut here, not made the excerpt:
 * the HTML report, which shows none, would pay for the text-width tables the excerpt loads.
 */
function outcomeLine(outcome: NonNullable<Transcript['outcome']>): string {
  const text =
    outcome.status === 'completed'
      ? (outcome.answer ?? '')
      : `${outcome.reason ?? 'failed'}: ${outcome.error?.message ?? ''}`;
  if (text.length <= OUTCOME_KEPT_CHARS) return text;
  let end = OUTCOME_KEPT_CHARS;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return Buffer.from(text.slice(0, end), 'utf8').toString('utf8');
}

const OUTCOME_KEPT_CHARS = 4 * LINE_EXCERPT_CHARS;

/** The spans, markers or round starts of a row that has none: one array for every such row. */
const NONE: readonly never[] = Object.freeze([]);

const ZERO: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

/** What agents did themselves: a retry's figures less what it inherited with its journal. */
export interface OwnFigures {
  readonly agents: number;
  readonly steps: number;
  readonly toolCalls: number;
  readonly retries: number;
  readonly usage: Usage;
  /** USD; null when some agent's is unknown. */
  readonly costUsd: number | null;
}

/** The sum of what `agents` did themselves: each request, tool call and token once. */
export function ownFigures(agents: readonly ReportAgent[]): OwnFigures {
  let figures: OwnFigures = { agents: 0, steps: 0, toolCalls: 0, retries: 0, usage: ZERO, costUsd: 0 };
  for (const agent of agents) {
    const part = agent.inherited;
    const inherited = agent.result?.inherited ?? (part && { usage: part.usage, costUsd: part.costUsd });
    const own = ownSpend({ usage: agent.usage, costUsd: agent.costUsd, inherited });
    figures = {
      agents: figures.agents + 1,
      steps: figures.steps + Math.max(0, agent.steps - (part?.steps ?? 0)),
      toolCalls: figures.toolCalls + Math.max(0, agent.toolCalls - (part?.toolCalls ?? 0)),
      retries: figures.retries + Math.max(0, agent.retries - (part?.retries ?? 0)),
      usage: addUsage(figures.usage, own.usage),
      costUsd: figures.costUsd === null || own.costUsd === null ? null : figures.costUsd + own.costUsd,
    };
  }
  return figures;
}

/** `3 model requests, 3.0k in / 300 out, cost $0.0036`: what unfinished attempts used. */
export function unfinishedText(figures: OwnFigures): string {
  return `${figures.steps} model request${figures.steps === 1 ? '' : 's'}, ${formatTokenCount(figures.usage.inputTokens, sideEstimated(figures.usage, 'input'))} in / ${formatTokenCount(figures.usage.outputTokens, sideEstimated(figures.usage, 'output'))} out, cost ${formatCost(figures.costUsd)}`;
}

/**
 * The agents of a run's `timeline` with a result line, which the run's totals count (as
 * `summary.json` does), and those with a journal and no line yet (a session was killed while they
 * ran), which they do not: `troupe resume` finishes them, and their line then counts. One
 * journal's agent counts.
 */
export function countedAgents(timeline: Timeline): {
  readonly counted: ReportAgent[];
  readonly unfinished: ReportAgent[];
} {
  const counted: ReportAgent[] = [];
  const unfinished: ReportAgent[] = [];
  for (const agent of timeline.agents) {
    if (agent.result !== undefined || !timeline.runDir) counted.push(agent);
    // Without a result line, it started when it has a journal (its transcript is not built for this).
    else if (agent.status !== 'not run') unfinished.push(agent);
  }
  return { counted, unfinished };
}

/**
 * The attempts of a run's `timeline` that started and have no result line (its `unfinished`
 * agents, see {@link countedAgents}), as `summarize` counts them: interrupted.
 */
export function unendedOf(timeline: Timeline): Unended {
  const entries = new Set<number>();
  let nested = 0;
  for (const agent of countedAgents(timeline).unfinished) {
    if (agent.index === null) nested += 1;
    else entries.add(agent.index);
  }
  return { entries, nested };
}

/**
 * The attempts of the run in `contents` that started and have no result line, as
 * {@link unendedOf} finds them in a timeline, from the journals of those attempts alone: each plan
 * entry's current attempt (the one after its latest line, or its first without one) whose journal
 * starts with `Started` (its first line only, at most `maxHeadBytes`, MAX_STARTED_HEAD_BYTES by
 * default; a whole first line longer than that counts as started too, unread; a journal whose first
 * line is torn or no event is not counted), and every agent without a
 * line spawned by an agent of the run (one with a line, or one of these), found by the parent its
 * journal's `Started` names (only the ids at the head of each such journal are read:
 * src/journal/started-head.ts; at most MAX_ADOPTION_SCAN_JOURNALS of them). For `troupe score`, which rewrites summary.json without
 * building the timeline (every journal read). A judge's journal names no parent: it is not one.
 */
export function unendedAttempts(contents: UnendedSource, bounds: UnendedBounds = {}): Unended {
  const { entries, nested, unknown } = unendedAttemptIds(contents, bounds);
  return { entries, nested: nested.size, ...(unknown.size > 0 ? { unknown: unknown.size } : {}) };
}

/** The bounds of {@link unendedAttemptIds}' reads. */
export interface UnendedBounds {
  /**
   * Bytes of each journal's first line read at most: for its ids, and of a plan entry's current
   * attempt for its `Started` (a longer whole line counts as started, unread).
   * @default MAX_STARTED_HEAD_BYTES (64 MiB)
   */
  readonly maxHeadBytes?: number;
}

/** What {@link unendedAttempts} reads: the plan, where the journals are, and the result lines so far. */
export type UnendedSource = Pick<RunDirContents, 'plan' | 'paths'> & {
  readonly results: Iterable<Pick<ResultLine, 'agentId' | 'index' | 'attempt'>>;
};

/**
 * {@link unendedAttempts} with the ids of the nested agents, for a caller that adds agents it
 * knows of itself (a session's own, whose journals may be elsewhere on the redis engine).
 */
export function unendedAttemptIds(
  contents: UnendedSource,
  bounds: UnendedBounds = {},
): {
  readonly entries: Set<number>;
  readonly nested: Set<string>;
  /**
   * Journals without a line, not a current attempt's, whose ids could not be read (past
   * `maxHeadBytes` of their first line, or past MAX_ADOPTION_SCAN_JOURNALS): each may be an unended
   * nested agent of the run, not counted in `nested` (`counts.nested.unknown` in summary.json).
   */
  readonly unknown: Set<string>;
} {
  const { plan, paths, results } = contents;
  const maxHeadBytes = bounds.maxHeadBytes ?? MAX_STARTED_HEAD_BYTES;
  const entries = new Set<number>();
  const nested = new Set<string>();
  const unknown = new Set<string>();
  if (!existsSync(paths.journals)) return { entries, nested, unknown };
  const files = new Set(readdirSync(paths.journals));
  const lined = new Set<string>();
  const lastLines = new Map<number, Pick<ResultLine, 'attempt'>>();
  for (const line of results) {
    lined.add(line.agentId);
    if (line.index !== null && (lastLines.get(line.index)?.attempt ?? 0) < line.attempt)
      lastLines.set(line.index, line);
  }
  // Agents of the run: those with a line, and the entries' current attempts that started.
  const ofRun = new Set(lined);
  const attempts = new Set<string>();
  for (const run of plan.runs) {
    const last = lastLines.get(run.index);
    const agentId = last === undefined ? run.agentId : agentIdFor(plan.idPrefix, run.index, last.attempt + 1);
    attempts.add(agentId);
    if (lined.has(agentId) || !files.has(`${agentId}.jsonl`)) continue;
    // Its first line only, at most `maxHeadBytes` (`type` sorts after the ids, so the line is
    // parsed whole): this runs at each session's start and end, over every unended journal. A
    // longer whole line (a huge context) counts too: it was a silent "not run" before.
    if (!entryStarted(journalFile(paths, agentId), maxHeadBytes)) continue;
    entries.add(run.index);
    ofRun.add(agentId);
  }
  // The others without a line, by the parent their journal names.
  const parents = new Map<string, string>();
  const prefix = plan.idPrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A judge's journal (`<entry's agent id>-judge-...`) names no parent: no agent of the run.
  const judge = new RegExp(`^${prefix}-\\d+(?:-r\\d+)?-judge-`);
  for (const file of files) {
    const agentId = file.endsWith('.jsonl') ? file.slice(0, -'.jsonl'.length) : undefined;
    if (agentId === undefined || lined.has(agentId) || attempts.has(agentId) || judge.test(agentId)) continue;
    // Not read (past the count bound) or not readable for its ids (past the head bound): whether
    // it is an agent of the run is not known, and it is counted as such, never dropped silently.
    if (parents.size >= MAX_ADOPTION_SCAN_JOURNALS) {
      unknown.add(agentId);
      continue;
    }
    const head = readStartedHead(join(paths.journals, file), maxHeadBytes);
    if (head === 'too_long') unknown.add(agentId);
    else if (head !== undefined && head.agentId === agentId && head.parentId !== undefined)
      parents.set(agentId, head.parentId);
  }
  for (let found = true; found; ) {
    found = false;
    for (const [agentId, parentId] of parents) {
      if (!ofRun.has(parentId)) continue;
      ofRun.add(agentId);
      parents.delete(agentId);
      nested.add(agentId);
      found = true;
    }
  }
  return { entries, nested, unknown };
}

/** An agent whose journal is damaged, and where that journal is. */
export interface DamagedJournal {
  readonly agentId: string;
  /** The journal's path, as the caller names it. */
  readonly journal: string;
  /** `ReportAgent.damage`. */
  readonly damage: string;
}

/** The agents of `timeline` whose journals are damaged, in the timeline's order. */
export function damagedJournals(
  timeline: Timeline,
  journalOf: (agentId: string) => string,
): DamagedJournal[] {
  return timeline.agents.flatMap((agent) =>
    agent.damage === undefined
      ? []
      : [{ agentId: agent.agentId, journal: journalOf(agent.agentId), damage: agent.damage }],
  );
}

/** Restarts of an agent without a result line: its Resumed events. */
function resumes(transcript: Transcript | undefined): number {
  return transcript === undefined
    ? 0
    : transcriptEntries(transcript).filter((e) => e.kind === 'resumed').length;
}

/**
 * Restarts of a retry without a result line: its Resumed events less those it copied and the one
 * it started from the copy with (`ownFrom`, when it wrote one).
 */
function ownResumes(
  transcript: Transcript | undefined,
  inherited: InheritedPart | undefined,
  ownFrom: number | undefined,
): number {
  if (inherited === undefined) return resumes(transcript);
  return Math.max(0, resumes(transcript) - inherited.restarts - (ownFrom === undefined ? 0 : 1));
}

/** The run's own events as marks on the timeline. */
function runMarks(events: readonly RunLogEvent[], origin: number): RunMark[] {
  const marks: RunMark[] = [];
  let session: { start: number; label: string } | undefined;
  for (const event of events) {
    const at = Date.parse(event.ts) - origin;
    if (!Number.isFinite(at)) continue;
    switch (event.type) {
      case 'session':
        if (event.event === 'started') {
          if (session)
            marks.push({ kind: 'session', start: session.start, end: undefined, label: session.label });
          session = { start: at, label: event.kind };
        } else {
          marks.push({
            kind: 'session',
            start: session?.start ?? at,
            end: at,
            label: `${event.kind}${event.interrupted ? ' (interrupted)' : ''}`,
          });
          session = undefined;
        }
        break;
      case 'backoff':
        marks.push({
          kind: 'backoff',
          start: at,
          end: at + event.retryAfterMs,
          label: `${event.provider} rate limited (429): every request to it waits ${event.retryAfterMs} ms`,
        });
        break;
      case 'thread':
        if (event.event === 'crashed')
          marks.push({
            kind: 'crash',
            at,
            hostId: event.hostId,
            label: `thread ${event.hostId} crashed${event.cause ? `: ${event.cause.message}` : ''}${event.agents && event.agents.length > 0 ? ` (took ${event.agents.length} agent${event.agents.length === 1 ? '' : 's'})` : ''}`,
          });
        else if (event.event === 'respawned')
          marks.push({
            kind: 'respawn',
            at,
            hostId: event.hostId,
            label: `thread ${event.hostId} respawned`,
          });
        break;
      default:
        break;
    }
  }
  if (session) marks.push({ kind: 'session', start: session.start, end: undefined, label: session.label });
  return marks;
}
