/**
 * The report's view of a run: every agent (finished, interrupted or never run) with the spans of
 * its journal on a common clock: model turns, tool calls and waits for instructions.
 */
import { existsSync } from 'node:fs';
import type { AuditEvent } from '../journal/events.ts';
import { readJournal } from '../journal/reader.ts';
import { addUsage } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import type { ResultLine } from './results.ts';
import { journalFile, type RunDirContents } from './run-dir.ts';

/** A stretch of an agent's time. */
export interface Span {
  readonly kind: 'model' | 'tool' | 'wait';
  /** Milliseconds since the run's first event. */
  readonly start: number;
  readonly end: number;
  /** Round number, tool name, or the instruction received. */
  readonly label: string;
  /** For tools: whether the call succeeded. */
  readonly ok?: boolean;
}

/** One agent of the report. */
export interface ReportAgent {
  readonly agentId: string;
  readonly index: number | null;
  readonly parentId: string | null;
  readonly agent: string;
  readonly attempt: number;
  /** `interrupted`: started, never ended (the run was killed); `not run`: never started. */
  readonly status: 'completed' | 'failed' | 'interrupted' | 'not run';
  readonly reason?: string;
  readonly error?: string;
  readonly result?: ResultLine;
  readonly task: string;
  readonly hostId: number | null;
  readonly usage: Usage;
  /** USD; null when unknown. */
  readonly costUsd: number | null;
  readonly rounds: number;
  /** Offsets in ms since the run's first event; undefined without a journal. */
  readonly start?: number;
  readonly end?: number;
  readonly spans: readonly Span[];
  /** Round starts (ms offsets). */
  readonly roundStarts: readonly number[];
}

/** Every agent of a run and the run's time range. */
export interface Timeline {
  /** Epoch ms of offset 0. */
  readonly origin: number;
  /** Milliseconds from the first to the last event. */
  readonly duration: number;
  readonly agents: readonly ReportAgent[];
}

const ZERO: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

/** Builds the timeline of a run directory from its results and journals. */
export function buildTimeline(contents: RunDirContents): Timeline {
  const { plan, paths, results } = contents;
  const journals = new Map<string, AuditEvent[]>();
  const load = (agentId: string): AuditEvent[] => {
    let events = journals.get(agentId);
    if (events === undefined) {
      const file = journalFile(paths, agentId);
      events = existsSync(file) ? readJournal(file).events : [];
      journals.set(agentId, events);
    }
    return events;
  };
  const entries: {
    agentId: string;
    line?: ResultLine;
    index: number | null;
    agent: string;
    attempt: number;
    task: string;
  }[] = [];
  const seen = new Set<string>();
  const tasks = new Map(plan.runs.map((run) => [run.index, run.task]));
  for (const line of results) {
    if (seen.has(line.agentId)) continue;
    seen.add(line.agentId);
    entries.push({
      agentId: line.agentId,
      line,
      index: line.index,
      agent: line.agent,
      attempt: line.attempt,
      task: (line.index === null ? undefined : tasks.get(line.index)) ?? startedTask(load(line.agentId)),
    });
  }
  for (const run of plan.runs) {
    if (results.some((line) => line.index === run.index)) continue;
    entries.push({ agentId: run.agentId, index: run.index, agent: run.agent, attempt: 1, task: run.task });
  }
  let origin = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const { agentId } of entries) {
    const events = load(agentId);
    const first = events[0];
    const final = events.at(-1);
    if (first) origin = Math.min(origin, Date.parse(first.ts));
    if (final) last = Math.max(last, Date.parse(final.ts));
  }
  if (!Number.isFinite(origin)) origin = Date.parse(plan.createdAt);
  if (!Number.isFinite(last)) last = origin;
  const agents = ordered(entries.map((entry) => reportAgent(entry, load(entry.agentId), origin)));
  return { origin, duration: Math.max(0, last - origin), agents };
}

/** Plan entries by index (attempts in order), each followed by the agents it spawned. */
function ordered(agents: readonly ReportAgent[]): ReportAgent[] {
  const children = new Map<string, ReportAgent[]>();
  const ids = new Set(agents.map((agent) => agent.agentId));
  const roots: ReportAgent[] = [];
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
  const out: ReportAgent[] = [];
  const visit = (agent: ReportAgent): void => {
    out.push(agent);
    for (const child of children.get(agent.agentId) ?? []) visit(child);
  };
  for (const root of roots) visit(root);
  return out;
}

function startedTask(events: readonly AuditEvent[]): string {
  const first = events[0];
  return first?.type === 'Started' ? first.task : '';
}

function reportAgent(
  entry: {
    agentId: string;
    line?: ResultLine;
    index: number | null;
    agent: string;
    attempt: number;
    task: string;
  },
  events: readonly AuditEvent[],
  origin: number,
): ReportAgent {
  const { line } = entry;
  const at = (event: AuditEvent): number => Date.parse(event.ts) - origin;
  const spans: Span[] = [];
  const rounds: number[] = [];
  const openCalls = new Map<string, { start: number; name: string }>();
  let openRound: { start: number; round: number; step: number | undefined } | undefined;
  let openWait: number | undefined;
  // Until a terminal event says otherwise (an interrupted agent has none), usage is the receipts' sum.
  let journalUsage: Usage = ZERO;
  let journalCost: number | null = 0;
  let journalRounds = 0;
  for (const event of events) {
    switch (event.type) {
      case 'InferenceSubmitted':
        openRound = { start: at(event), round: event.round, step: event.step };
        if ((event.request ?? 1) === 1) rounds.push(at(event));
        break;
      case 'ProviderReceipt':
        if (openRound)
          spans.push({
            kind: 'model',
            start: openRound.start,
            end: at(event),
            label: `round ${openRound.round}${openRound.step === undefined ? '' : `, step ${openRound.step}`}`,
          });
        openRound = undefined;
        journalUsage = addUsage(journalUsage, event.receipt.usage);
        journalCost =
          journalCost === null || event.receipt.costUsd === undefined
            ? null
            : journalCost + event.receipt.costUsd;
        journalRounds = Math.max(journalRounds, event.round);
        break;
      case 'ToolCall':
        openCalls.set(event.callId, { start: at(event), name: event.name });
        break;
      case 'ToolResult': {
        const call = openCalls.get(event.callId);
        openCalls.delete(event.callId);
        spans.push({
          kind: 'tool',
          start: call?.start ?? at(event),
          end: at(event),
          label: event.name,
          ok: event.ok,
        });
        break;
      }
      case 'Waiting':
        openWait = at(event);
        break;
      case 'Instructed':
        if (openWait !== undefined)
          spans.push({ kind: 'wait', start: openWait, end: at(event), label: event.text });
        openWait = undefined;
        break;
      case 'Completed':
      case 'Failed':
        journalUsage = event.usage;
        journalCost = event.costUsd;
        journalRounds = event.rounds;
        break;
      default:
        break;
    }
  }
  const first = events[0];
  const final = events.at(-1);
  const end = final ? at(final) : undefined;
  if (openWait !== undefined && end !== undefined)
    spans.push({ kind: 'wait', start: openWait, end, label: '(no instruction)' });
  const status: ReportAgent['status'] = line ? line.status : events.length > 0 ? 'interrupted' : 'not run';
  return {
    agentId: entry.agentId,
    index: entry.index,
    parentId: line?.parentId ?? (first?.type === 'Started' ? (first.parentId ?? null) : null),
    agent: entry.agent,
    attempt: entry.attempt,
    status,
    ...(line?.reason === undefined ? {} : { reason: line.reason }),
    ...(line?.error === undefined ? {} : { error: line.error.message }),
    ...(line === undefined ? {} : { result: line }),
    task: entry.task,
    hostId: line?.hostId ?? null,
    usage: line?.usage ?? journalUsage,
    costUsd: line?.costUsd ?? journalCost,
    rounds: line?.rounds ?? journalRounds,
    ...(first === undefined ? {} : { start: at(first) }),
    ...(end === undefined ? {} : { end }),
    spans,
    roundStarts: rounds,
  };
}
