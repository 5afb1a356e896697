/** `troupe report RUN_DIR` in the terminal: a header, one row per agent, and the totals. */
import { approvalsReportText, readApprovals } from './approvals.ts';
import { LINE_EXCERPT_CHARS } from './constants.ts';
import { closingText } from './execute.ts';
import { excerpt, formatCost, formatDuration, formatTokenCount, shortId } from './format.ts';
import { outcomeText } from './results.ts';
import type { RunDirContents, RunDirState } from './run-dir.ts';
import { type RunSummary, recordedSessions, summarize } from './summary.ts';
import { displayWidth, fitWidth, padWidth, tableWidth, wrapWidth } from './text-width.ts';
import {
  countedAgents,
  ownFigures,
  type ReportAgent,
  type Timeline,
  unendedOf,
  unfinishedText,
} from './timeline.ts';

/**
 * The summary of a run directory, as the reports show it. Given the run's `timeline`, computed
 * afresh from its results, the attempts the timeline shows started without a line (interrupted)
 * and the sessions `events.jsonl` shows, so a summary.json a kill left behind is never shown.
 * Without it (no journals read): the saved one, unless there is none yet, it counts other lines
 * than `results.jsonl` holds (a session killed outright wrote lines and no summary), or its last
 * session is still `open` (running, or killed outright).
 */
export function runSummaryOf(contents: RunDirContents | RunDirState, timeline?: Timeline): RunSummary {
  const { summary } = contents;
  const lines = 'size' in contents.results ? contents.results.size : contents.results.length;
  if (
    timeline === undefined &&
    summary !== undefined &&
    summary.agents.length === lines &&
    summary.sessions.at(-1)?.open !== true
  )
    return summary;
  return summarize(
    contents.plan,
    contents.results,
    summary === undefined ? [] : recordedSessions(summary, contents.events),
    new Date(),
    summary?.budgetSpent,
    timeline === undefined ? undefined : unendedOf(timeline),
  );
}

/** The terminal report of a run; `closing` adds the totals and what to do next. */
export function reportText(
  contents: RunDirContents,
  timeline: Timeline,
  columns = 120,
  closing = true,
): string {
  const chunks: string[] = [];
  writeReportText(contents, timeline, (chunk) => chunks.push(chunk), columns, closing);
  return chunks.join('');
}

/**
 * Rows of the agent table handed to `write` at a time by {@link writeReportText}: every chunk is
 * whole lines.
 */
export const REPORT_ROWS_PER_CHUNK = 1000;

/**
 * {@link reportText} handed to `write` as it is built, in chunks of whole lines (the header, every
 * REPORT_ROWS_PER_CHUNK rows of the table, the closing): the report of 100,000 agents held each
 * row's cells, its line and the whole text at once. The chunks joined are `reportText`'s string.
 */
export function writeReportText(
  contents: RunDirContents,
  timeline: Timeline,
  write: (chunk: string) => void,
  columns = 120,
  closing = true,
): void {
  const { plan } = contents;
  const summary = runSummaryOf(contents, timeline);
  const width = tableWidth(columns);
  const header = [
    `run ${plan.runId}${plan.name ? ` (${plan.name})` : ''}: provider ${plan.provider.name}${summary.model ? `, model ${summary.model}` : ''}${plan.provider.simulated ? ' [simulated model]' : ''}`,
    `created ${plan.createdAt}${plan.planFile ? ` from ${plan.planFile}` : ''}; sessions: ${summary.sessions.map((s) => `${s.kind}${s.interrupted ? ' (interrupted)' : ''}`).join(', ') || 'none recorded'}`,
  ].flatMap((line) => wrapWidth(line, width));
  write(`${[...header, ''].join('\n')}\n`);
  writeAgentTable(timeline, width, write);
  const approvals = readApprovals(contents.paths.root);
  const decisions = approvalsReportText(approvals, width);
  // The totals are summary.json's: result lines. What attempts with none yet used is said apart.
  const { unfinished } = countedAgents(timeline);
  const apart =
    closing && unfinished.length > 0
      ? wrapWidth(
          `not in the totals below: ${unfinished.length} attempt${unfinished.length === 1 ? '' : 's'} with no result line yet (a session was killed): ${unfinishedText(ownFigures(unfinished))} so far; \`troupe resume\` ends ${unfinished.length === 1 ? 'it' : 'them'}`,
          width,
        )
      : [];
  write(
    `${['', ...decisions, ...apart].join('\n')}${apart.length > 0 ? '\n' : ''}\n${closing ? closingText(summary, contents.paths.root, approvals, plan.provider.source, width, true) : ''}`,
  );
}

/** `troupe report JOURNAL`: the agent's row, then where to read more. */
export function journalReportText(file: string, timeline: Timeline, columns = 120): string {
  const agent = timeline.agents[0];
  const transcript = agent?.transcript;
  const width = tableWidth(columns);
  const header = wrapWidth(
    `journal ${file}${transcript ? `: ${transcript.definition.name}, provider ${transcript.provider}, model ${transcript.model}` : ''}`,
    width,
  );
  const hint = [
    '',
    `transcript: troupe show ${file} [--full] [--inputs]`,
    `HTML: troupe report ${file} --html report.html`,
    '',
  ];
  const chunks: string[] = [];
  writeAgentTable(timeline, width, (chunk) => chunks.push(chunk));
  return `${[...header, ''].join('\n')}\n${chunks.join('')}${hint.join('\n')}`;
}

const TABLE_HEAD = ['#', 'AGENT ID', 'DEFINITION', 'STATUS', 'ROUNDS', 'IN', 'OUT', 'COST', 'TIME', 'RESULT'];

/**
 * The agent table (format.ts's `table`), each line ending in a newline, handed to `write` every
 * REPORT_ROWS_PER_CHUNK rows: the column widths are measured first, a row's cells built and let go
 * at a time, then each row is built again as it is written.
 */
function writeAgentTable(timeline: Timeline, width: number, write: (chunk: string) => void): void {
  const widths = TABLE_HEAD.map((cell) => displayWidth(cell));
  for (const agent of timeline.agents)
    agentCells(agent).forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, displayWidth(cell));
    });
  const line = (row: readonly string[]): string =>
    fitWidth(
      row
        .map((cell, column) => (column === row.length - 1 ? cell : padWidth(cell, widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
      width,
    );
  let chunk = `${line(TABLE_HEAD)}\n`;
  let rows = 0;
  for (const agent of timeline.agents) {
    chunk += `${line(agentCells(agent))}\n`;
    rows += 1;
    if (rows % REPORT_ROWS_PER_CHUNK === 0) {
      write(chunk);
      chunk = '';
    }
  }
  if (chunk !== '') write(chunk);
}

function agentCells(agent: ReportAgent): string[] {
  return [
    // `↳` marks an agent spawned by an agent; one journal's own agent (troupe run) is neither.
    agent.index !== null ? String(agent.index) : agent.parentId !== null ? '↳' : '-',
    shortId(agent.agentId),
    agent.agent,
    agent.reason ? `${agent.status} (${agent.reason})` : agent.status,
    roundsText(agent),
    formatTokenCount(agent.usage.inputTokens, agent.usage.estimated),
    formatTokenCount(agent.usage.outputTokens, agent.usage.estimated),
    formatCost(agent.costUsd),
    agent.start !== undefined && agent.end !== undefined ? formatDuration(agent.end - agent.start) : '-',
    // Without a line, its journal's outcome as its row kept it: no transcript is built for it.
    excerpt(agent.result ? outcomeText(agent.result) : (agent.outcomeExcerpt ?? ''), LINE_EXCERPT_CHARS),
  ];
}

/** Its rounds, and how many a retry inherited with its journal: `2 (1 inherited)`. */
export function roundsText(agent: ReportAgent): string {
  const inherited = agent.inherited?.rounds ?? 0;
  return inherited > 0 ? `${agent.rounds} (${inherited} inherited)` : String(agent.rounds);
}
