/** `troupe report RUN_DIR` in the terminal: a header, one row per agent, and the totals. */
import { approvalsReportText, readApprovals } from './approvals.ts';
import { LINE_EXCERPT_CHARS } from './constants.ts';
import { closingText } from './execute.ts';
import { excerpt, formatCost, formatDuration, formatTokenCount, shortId, table } from './format.ts';
import { outcomeText } from './results.ts';
import type { RunDirContents } from './run-dir.ts';
import { type RunSummary, summarize } from './summary.ts';
import { fitWidth, tableWidth, wrapWidth } from './text-width.ts';
import type { Timeline } from './timeline.ts';

/** The summary of a run directory: the saved one, or one computed from its results when there is none yet. */
export function runSummaryOf(contents: RunDirContents): RunSummary {
  return contents.summary ?? summarize(contents.plan, contents.results, []);
}

/** The terminal report of a run; `closing` adds the totals and what to do next. */
export function reportText(
  contents: RunDirContents,
  timeline: Timeline,
  columns = 120,
  closing = true,
): string {
  const { plan } = contents;
  const summary = runSummaryOf(contents);
  const width = tableWidth(columns);
  const header = [
    `run ${plan.runId}${plan.name ? ` (${plan.name})` : ''}: provider ${plan.provider.name}${summary.model ? `, model ${summary.model}` : ''}${plan.provider.simulated ? ' [simulated model]' : ''}`,
    `created ${plan.createdAt}${plan.planFile ? ` from ${plan.planFile}` : ''}; sessions: ${summary.sessions.map((s) => `${s.kind}${s.interrupted ? ' (interrupted)' : ''}`).join(', ') || 'none recorded'}`,
  ].flatMap((line) => wrapWidth(line, width));
  const approvals = readApprovals(contents.paths.root);
  const decisions = approvalsReportText(approvals, width);
  return `${[...header, '', ...agentTable(timeline, width), '', ...decisions].join('\n')}\n${closing ? closingText(summary, contents.paths.root, approvals, plan.provider.source, width) : ''}`;
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
  return `${[...header, '', ...agentTable(timeline, width), ...hint].join('\n')}`;
}

function agentTable(timeline: Timeline, width: number): string[] {
  const rows = [
    ['#', 'AGENT ID', 'DEFINITION', 'STATUS', 'ROUNDS', 'IN', 'OUT', 'COST', 'TIME', 'RESULT'],
    ...timeline.agents.map((agent) => [
      // `↳` marks an agent spawned by an agent; one journal's own agent (troupe run) is neither.
      agent.index !== null ? String(agent.index) : agent.parentId !== null ? '↳' : '-',
      shortId(agent.agentId),
      agent.agent,
      agent.reason ? `${agent.status} (${agent.reason})` : agent.status,
      String(agent.rounds),
      formatTokenCount(agent.usage.inputTokens, agent.usage.estimated),
      formatTokenCount(agent.usage.outputTokens, agent.usage.estimated),
      formatCost(agent.costUsd),
      agent.start !== undefined && agent.end !== undefined ? formatDuration(agent.end - agent.start) : '-',
      agent.result
        ? excerpt(outcomeText(agent.result), LINE_EXCERPT_CHARS)
        : agent.transcript?.outcome
          ? excerpt(
              agent.transcript.outcome.status === 'completed'
                ? (agent.transcript.outcome.answer ?? '')
                : `${agent.transcript.outcome.reason ?? 'failed'}: ${agent.transcript.outcome.error?.message ?? ''}`,
              LINE_EXCERPT_CHARS,
            )
          : '',
    ]),
  ];
  return table(rows).map((line) => fitWidth(line, width));
}
