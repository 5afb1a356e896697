/** `summary.json`: counts, usage and cost by agent and in total, wall time, failures by reason. */
import type { ScoringSummary } from '../eval/types.ts';
import { ownSpend } from '../loop/outcome.ts';
import type { FailureReason, InheritedSpend } from '../loop/types.ts';
import { addUsage } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import type { ReplayCounts } from '../replay/types.ts';
import { RUN_DIR_FORMAT } from './constants.ts';
import { latestByIndex, type ResultLine } from './results.ts';
import type { RunLogEvent } from './run-log.ts';
import { type RunLimits, type RunPlan, type RunReplay, runLimitsOf } from './run-plan.ts';
import { scoringSummaryOf } from './run-scoring.ts';

/** One command that worked on the run: the first `fanout` (or demo), then each `resume`. */
export interface RunSession {
  readonly kind: 'fanout' | 'resume' | 'demo' | 'score' | 'replay';
  readonly startedAt: string;
  readonly endedAt: string;
  readonly interrupted: boolean;
  /**
   * Written when the session started, and not since: it is running, or was killed outright
   * (SIGKILL, a power cut) before it could write its end. `interrupted` is true and `endedAt` its
   * start; readers take its end from its last event in `events.jsonl` ({@link recordedSessions}).
   */
  readonly open?: true;
}

/**
 * The run's sessions so far: those `summary.json` records, then each session `events.jsonl` shows
 * starting after the last of them, which never wrote a summary (killed outright: SIGKILL, a power
 * cut). Such a session is interrupted and ends at its last logged event, so the run's wall time
 * still counts it.
 */
export function recordedSessions(
  summary: Pick<RunSummary, 'sessions'> | undefined,
  events: readonly RunLogEvent[],
): RunSession[] {
  const sessions = [...(summary?.sessions ?? [])];
  // A session the summary holds as written at its start (`open`) is read like one that wrote no
  // summary: from its `started` event on.
  const last = sessions.at(-1);
  if (last?.open === true) sessions.pop();
  const recordedUntil = Math.max(0, ...sessions.map((session) => Date.parse(session.endedAt)));
  let open: { kind: RunSession['kind']; startedAt: string; lastAt: string } | undefined;
  const close = (): void => {
    if (open !== undefined)
      sessions.push({ kind: open.kind, startedAt: open.startedAt, endedAt: open.lastAt, interrupted: true });
    open = undefined;
  };
  for (const event of events) {
    if (event.type === 'session' && event.event === 'started') {
      close();
      if (Date.parse(event.ts) > recordedUntil)
        open = { kind: event.kind, startedAt: event.ts, lastAt: event.ts };
    } else if (open !== undefined) {
      if (event.type === 'session' && event.event === 'ended') {
        sessions.push({
          kind: open.kind,
          startedAt: open.startedAt,
          endedAt: event.ts,
          interrupted: event.interrupted ?? false,
        });
        open = undefined;
      } else open.lastAt = event.ts;
    }
  }
  close();
  // Its `started` event was not logged (events.jsonl could not be written): kept as written.
  if (last?.open === true && !sessions.some((session) => session.startedAt >= last.startedAt)) {
    const { open: _open, ...ended } = last;
    sessions.push(ended);
  }
  return sessions;
}

/** Usage and cost of a group of agents. */
export interface GroupTotals {
  readonly agents: number;
  readonly completed: number;
  readonly failed: number;
  /** `usage.estimated` when some counts were estimated. */
  readonly usage: Usage;
  /** USD; null when some agent's cost is unknown (no price for its model). */
  readonly costUsd: number | null;
}

/** One agent in the summary. */
export interface AgentSummary {
  readonly agentId: string;
  readonly index: number | null;
  readonly parentId: string | null;
  readonly agent: string;
  readonly attempt: number;
  readonly status: 'completed' | 'failed';
  readonly reason?: FailureReason;
  /** Its whole history: a retry's includes what the attempt it continues spent (`inherited`). */
  readonly usage: Usage;
  readonly costUsd: number | null;
  /** A retry's share of `usage` and `costUsd` spent by the attempt it continues (ResultLine.inherited). */
  readonly inherited?: InheritedSpend;
  readonly rounds: number;
  readonly steps?: number;
  /** From start to end; null when the agent never started. */
  readonly wallTimeMs: number | null;
}

/** `summary.json`. */
export interface RunSummary {
  readonly format: typeof RUN_DIR_FORMAT;
  readonly runId: string;
  readonly name?: string;
  readonly planFile: string | null;
  readonly provider: string;
  readonly simulated: boolean;
  readonly model: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Sum of the sessions' wall times. */
  readonly wallTimeMs: number;
  readonly sessions: readonly RunSession[];
  /** The last session was interrupted (Ctrl-C). */
  readonly interrupted: boolean;
  /**
   * Every plan entry has a final outcome (completed, or failed for a reason other than cancelled),
   * none is interrupted, and no session is `open`.
   */
  readonly complete: boolean;
  /**
   * Each plan entry counted once, by its current attempt: its newest one, result line or not (the
   * one `troupe resume` continues). An attempt with a journal and no result line is `interrupted`,
   * whatever the line of the attempt before it says.
   */
  readonly counts: {
    /** Plan entries. */
    readonly planned: number;
    readonly completed: number;
    /** Failed plan entries, cancelled ones included. */
    readonly failed: number;
    readonly cancelled: number;
    /**
     * Plan entries whose current attempt started and has no result line: the session running it
     * was killed (or is still running). `troupe resume` finishes them.
     */
    readonly interrupted: number;
    /** Plan entries that never started. */
    readonly notRun: number;
    /** Agents spawned by other agents: those with a result line, and those started without one. */
    readonly nested: {
      readonly completed: number;
      readonly failed: number;
      readonly interrupted: number;
      /**
       * Journals without a result line whose ids lie past what the count reads of their first
       * line (`MAX_STARTED_HEAD_BYTES`), or past `MAX_ADOPTION_SCAN_JOURNALS` journals: each may be
       * an agent of the run left unended, not counted in `interrupted`. Absent when there are none.
       */
      readonly unknown?: number;
    };
  };
  /**
   * Every attempt of every agent, cancelled ones included: what the run used, each request once (a
   * retry adds only what it spent itself, not the requests it inherited with the journal of the
   * attempt it continues). `usage.estimated` when some counts were estimated because a server
   * reported none.
   */
  readonly usage: Usage;
  /** What the run cost in USD; null when some agent's cost is unknown (see `unpricedAgents`). */
  readonly costUsd: number | null;
  /** Agent attempts whose cost is unknown because no price is known for their model. */
  readonly unpricedAgents: number;
  /** Final failures (the last attempt of each plan entry, and nested agents) by reason. */
  readonly failures: Readonly<Partial<Record<FailureReason, number>>>;
  /** The run's budgets (0 = unlimited). */
  readonly runLimits: RunLimits;
  /** Set when the run's budget was spent and its running agents were cancelled: why. */
  readonly budgetSpent?: string;
  readonly byDefinition: Readonly<Record<string, GroupTotals>>;
  readonly agents: readonly AgentSummary[];
  /**
   * Per scorer: pass rate and mean score over every plan entry; per entry: its scores. Present
   * when the plan declares `scorers`.
   */
  readonly scoring?: ScoringSummary;
  /**
   * A replay: what it replays, and how the tool calls of its agents (every attempt, nested ones
   * included) were answered: from the recording, live (read-only), or refused.
   */
  readonly replay?: {
    readonly of: string;
    readonly calls: ReplayCounts;
    /** Plan entries with no recorded journal, replayed with nothing recorded; absent when none. */
    readonly unrecorded?: number;
  };
}

/**
 * What the `--json` `summary` event carries: `summary.json` without its lists of one item per
 * agent (`agents`) and per plan entry (`scoring.items`), which at 100,000 entries made the event
 * one line of tens of megabytes; `agentCount` and `scoring.itemCount` say how many there are, and
 * the event's `file` where to read them.
 */
export type SummaryHead = Omit<RunSummary, 'agents' | 'scoring'> & {
  /** Entries of `summary.json`'s `agents`. */
  readonly agentCount: number;
  readonly scoring?: Omit<ScoringSummary, 'items'> & {
    /** Entries of `summary.json`'s `scoring.items`. */
    readonly itemCount: number;
  };
};

/** `summary` without its per-agent and per-item lists (see {@link SummaryHead}). */
export function summaryHead(summary: RunSummary): SummaryHead {
  const { agents, scoring, ...rest } = summary;
  return {
    ...rest,
    agentCount: agents.length,
    ...(scoring === undefined
      ? {}
      : { scoring: { scorers: scoring.scorers, itemCount: scoring.items.length } }),
  };
}

/** What the summary needs of a result line: no task, result, answer, error or metadata. */
export type SummaryLine = Pick<
  ResultLine,
  | 'index'
  | 'agentId'
  | 'parentId'
  | 'agent'
  | 'attempt'
  | 'status'
  | 'reason'
  | 'usage'
  | 'costUsd'
  | 'inherited'
  | 'rounds'
  | 'steps'
  | 'startedAt'
  | 'endedAt'
  | 'scores'
  | 'replay'
>;

/**
 * The part of `line` {@link summarize} reads: what a session keeps of each line it wrote, so a
 * 20,000-task run does not hold every answer and error in memory until it ends.
 */
export function summaryLine(line: ResultLine): SummaryLine {
  return {
    index: line.index,
    agentId: line.agentId,
    parentId: line.parentId,
    agent: line.agent,
    attempt: line.attempt,
    status: line.status,
    ...(line.reason === undefined ? {} : { reason: line.reason }),
    usage: line.usage,
    costUsd: line.costUsd,
    ...(line.inherited === undefined ? {} : { inherited: line.inherited }),
    rounds: line.rounds,
    ...(line.steps === undefined ? {} : { steps: line.steps }),
    startedAt: line.startedAt,
    endedAt: line.endedAt,
    ...(line.scores === undefined ? {} : { scores: line.scores }),
    ...(line.replay === undefined ? {} : { replay: line.replay }),
  };
}

const ZERO: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

/**
 * Attempts that started and have no result line (their journal shows them; a session was killed
 * or is running): they count as `interrupted`, and are in none of the totals until their line is
 * written.
 */
export interface Unended {
  /** Plan entries whose current attempt is such an attempt. */
  readonly entries: ReadonlySet<number>;
  /** Agents spawned by agents that are. */
  readonly nested: number;
  /** Journals that may be such agents, whose ids were not read (`counts.nested.unknown`); absent when none. */
  readonly unknown?: number;
}

const NONE_UNENDED: Unended = { entries: new Set(), nested: 0 };

/**
 * Builds the summary of a run from its plan, every result line, its sessions and the attempts
 * that started and have no line yet (`unended`). `results` is iterated several times: an array,
 * or a ResultStore that makes each line as it is reached.
 */
export function summarize(
  plan: RunPlan,
  results: Iterable<SummaryLine>,
  sessions: readonly RunSession[],
  now: Date = new Date(),
  budgetSpent?: string,
  unended: Unended = NONE_UNENDED,
): RunSummary {
  const latest = latestByIndex(results);
  // An entry whose current attempt has no line is counted by it, not by the line before it.
  for (const index of unended.entries) latest.delete(index);
  const nested: SummaryLine[] = [];
  for (const line of results) if (line.index === null) nested.push(line);
  const finals = [...latest.values(), ...nested];
  const failures: Partial<Record<FailureReason, number>> = {};
  for (const line of finals) {
    if (line.status === 'failed' && line.reason) failures[line.reason] = (failures[line.reason] ?? 0) + 1;
  }
  const byDefinition: Record<string, GroupTotals> = {};
  let usage = ZERO;
  let costUsd: number | null = 0;
  let unpricedAgents = 0;
  for (const line of results) {
    const own = ownSpend(line);
    usage = addUsage(usage, own.usage);
    costUsd = addCost(costUsd, own.costUsd);
    if (line.costUsd === null) unpricedAgents += 1;
    const group = byDefinition[line.agent] ?? { agents: 0, completed: 0, failed: 0, usage: ZERO, costUsd: 0 };
    byDefinition[line.agent] = {
      agents: group.agents + 1,
      completed: group.completed + (line.status === 'completed' ? 1 : 0),
      failed: group.failed + (line.status === 'failed' ? 1 : 0),
      usage: addUsage(group.usage, own.usage),
      costUsd: addCost(group.costUsd, own.costUsd),
    };
  }
  const planLines = [...latest.values()];
  const completed = planLines.filter((line) => line.status === 'completed').length;
  const cancelled = planLines.filter(
    (line) => line.status === 'failed' && line.reason === 'cancelled',
  ).length;
  const failed = planLines.length - completed;
  const interrupted = plan.runs.filter((run) => unended.entries.has(run.index)).length;
  return {
    format: RUN_DIR_FORMAT,
    runId: plan.runId,
    ...(plan.name === undefined ? {} : { name: plan.name }),
    planFile: plan.planFile,
    provider: plan.provider.name,
    simulated: plan.provider.simulated,
    model: plan.model ?? plan.defaultModel ?? null,
    createdAt: plan.createdAt,
    updatedAt: now.toISOString(),
    wallTimeMs: sessions.reduce(
      (sum, s) => sum + Math.max(0, Date.parse(s.endedAt) - Date.parse(s.startedAt)),
      0,
    ),
    sessions,
    interrupted: sessions.at(-1)?.interrupted ?? false,
    complete:
      sessions.at(-1)?.open !== true &&
      plan.runs.every((run) => {
        const line = latest.get(run.index);
        return line !== undefined && !(line.status === 'failed' && line.reason === 'cancelled');
      }),
    counts: {
      planned: plan.runs.length,
      completed,
      failed,
      cancelled,
      interrupted,
      notRun: plan.runs.length - planLines.length - interrupted,
      nested: {
        completed: nested.filter((line) => line.status === 'completed').length,
        failed: nested.filter((line) => line.status === 'failed').length,
        interrupted: unended.nested,
        ...(unended.unknown === undefined || unended.unknown === 0 ? {} : { unknown: unended.unknown }),
      },
    },
    usage,
    costUsd,
    unpricedAgents,
    failures,
    runLimits: runLimitsOf(plan),
    ...(budgetSpent === undefined ? {} : { budgetSpent }),
    byDefinition,
    agents: Array.from(results, agentSummary),
    ...scoringOf(plan, latest),
    ...(plan.replay === undefined ? {} : { replay: replaySummary(plan.replay, results) }),
  };
}

function replaySummary(replay: RunReplay, results: Iterable<SummaryLine>): RunSummary['replay'] {
  const unrecorded = replay.journals.filter((journal) => journal === null).length;
  return { of: replay.of, calls: replayCalls(results), ...(unrecorded === 0 ? {} : { unrecorded }) };
}

function replayCalls(results: Iterable<SummaryLine>): ReplayCounts {
  let recorded = 0;
  let live = 0;
  let refused = 0;
  for (const line of results) {
    recorded += line.replay?.recorded ?? 0;
    live += line.replay?.live ?? 0;
    refused += line.replay?.refused ?? 0;
  }
  return { recorded, live, refused };
}

function scoringOf(plan: RunPlan, latest: ReadonlyMap<number, SummaryLine>): { scoring?: ScoringSummary } {
  const scoring = scoringSummaryOf(plan, latest);
  return scoring === undefined ? {} : { scoring };
}

function agentSummary(line: SummaryLine): AgentSummary {
  return {
    agentId: line.agentId,
    index: line.index,
    parentId: line.parentId,
    agent: line.agent,
    attempt: line.attempt,
    status: line.status,
    ...(line.reason === undefined ? {} : { reason: line.reason }),
    usage: line.usage,
    costUsd: line.costUsd,
    ...(line.inherited === undefined ? {} : { inherited: line.inherited }),
    rounds: line.rounds,
    ...(line.steps === undefined ? {} : { steps: line.steps }),
    wallTimeMs:
      line.startedAt === null ? null : Math.max(0, Date.parse(line.endedAt) - Date.parse(line.startedAt)),
  };
}

/** A sum of costs that is unknown (null) as soon as one part is. */
function addCost(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : a + b;
}
