/**
 * `troupe report --html`: one self-contained HTML file (inline CSS, SVG, JSON data and a few lines
 * of script; nothing is fetched) with the run's totals, its scores (when the plan has scorers), a
 * timeline of every agent across threads from the run's first event, token and cost charts,
 * failures, and every agent's transcript to drill into.
 */
import type { ScoringSummary } from '../eval/types.ts';
import { type ApprovalRecord, readApprovals } from './approvals.ts';
import {
  REPORT_CHART_AGENTS,
  REPORT_TIMELINE_MAX_AGENTS,
  REPORT_TRANSCRIPT_MAX_AGENTS,
} from './constants.ts';
import {
  type EstimatedUsage,
  estimateNote,
  excerpt,
  formatCost,
  formatDuration,
  formatTokenCount,
  formatTokens,
  shortId,
  sideEstimated,
} from './format.ts';
import { approvalsSection } from './html-approvals.ts';
import { barChart, chartRows, esc, timelineSvg, toolLegend } from './html-charts.ts';
import { REPORT_SCRIPT, REPORT_STYLE, securityPolicyMeta } from './html-page.ts';
import { judgesCost, scoreCells, scoredItems, scoreHeaders, scoresSection } from './html-scores.ts';
import { type ProviderChoice, simulatedReason } from './provider-choice.ts';
import { runSummaryOf } from './report-text.ts';
import { outcomeText } from './results.ts';
import type { RunDirContents } from './run-dir.ts';
import type { RunSummary } from './summary.ts';
import {
  countedAgents,
  type DamagedJournal,
  type OwnFigures,
  ownFigures,
  type ReportAgent,
  type Timeline,
  unfinishedText,
} from './timeline.ts';
import { inputData, transcriptHtml } from './transcript-html.ts';

/** What the page says about what it reports on: a run directory or one journal. */
export interface ReportPage {
  /** The `<h1>`. */
  readonly heading: string;
  /** The `<title>`. */
  readonly title: string;
  /** The line under the heading: facts joined by `·`. */
  readonly facts: readonly string[];
  readonly simulated: boolean;
  /** What chose the provider (a run's `plan.json`), for why the simulated model answered. */
  readonly providerSource?: ProviderChoice['source'];
  readonly interrupted: boolean;
  /** Wall time of the sessions; undefined: the timeline's span. */
  readonly wallTimeMs: number | undefined;
  /** The run's approval decisions (a run directory's `approvals.jsonl`); none for a journal. */
  readonly approvals?: readonly ApprovalRecord[];
  /** The run's scores (the summary's `scoring`, as the terminal report prints them); none without scorers. */
  readonly scoring?: ScoringSummary;
  /** Journals that are damaged (`damagedJournals`): a banner lists them. */
  readonly damaged?: readonly DamagedJournal[];
  /** A run's counts, as its summary has them (`runSummaryOf`): the cards show them. */
  readonly counts?: RunSummary['counts'];
}

/** The page facts of a run directory, from its summary computed afresh with its `timeline` (`runSummaryOf`). */
export function runPage(contents: RunDirContents, timeline: Timeline): ReportPage {
  const { plan } = contents;
  const summary = runSummaryOf(contents, timeline);
  const model = summary.model ?? plan.model ?? plan.defaultModel;
  const scoring = summary.scoring;
  return {
    counts: summary.counts,
    approvals: readApprovals(contents.paths.root),
    ...(scoring === undefined ? {} : { scoring }),
    heading: plan.name ?? `troupe run ${plan.runId}`,
    title: `troupe run ${plan.runId}`,
    facts: [
      `run ${plan.runId}`,
      `provider ${plan.provider.name}`,
      ...(model ? [`model ${model}`] : []),
      `${plan.threads} thread(s), ${plan.concurrency} at a time`,
      `created ${plan.createdAt}`,
      ...(plan.planFile ? [`plan ${plan.planFile}`] : []),
    ],
    simulated: plan.provider.simulated,
    providerSource: plan.provider.source,
    interrupted: summary.interrupted,
    wallTimeMs: summary.wallTimeMs || undefined,
  };
}

/** The page facts of one agent's journal. */
export function journalPage(file: string, timeline: Timeline): ReportPage {
  const agent = timeline.agents[0];
  const transcript = agent?.transcript;
  return {
    heading: `agent ${agent?.agentId ?? 'unknown'}`,
    title: `troupe journal ${agent?.agentId ?? file}`,
    facts: [
      `journal ${file}`,
      ...(transcript
        ? [
            `definition ${transcript.definition.name}`,
            `provider ${transcript.provider}`,
            `model ${transcript.model}`,
          ]
        : []),
      `started ${new Date(timeline.origin).toISOString()}`,
    ],
    simulated: transcript?.provider === 'simulated',
    interrupted: agent?.status === 'interrupted',
    wallTimeMs: undefined,
  };
}

/** The HTML report. */
export function renderHtmlReport(page: ReportPage, timeline: Timeline, now: Date = new Date()): string {
  const agents = timeline.agents;
  const drawn = agents.slice(0, REPORT_TIMELINE_MAX_AGENTS);
  const failed = agents.filter((agent) => agent.status !== 'completed');
  const anchors = new Map(agents.map((agent, index) => [agent.agentId, `a-${index}`]));
  const detailed = transcriptAgents(agents);
  const hasCost = agents.some((agent) => (agent.costUsd ?? 0) > 0);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">${securityPolicyMeta(REPORT_SCRIPT)}<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(page.title)}</title><style>${REPORT_STYLE}</style></head>
<body><main>
<h1>${esc(page.heading)}</h1>
<div class="sub">${page.facts.map(esc).join(' · ')}</div>
${page.simulated ? `<div class="banner"><b>Simulated model:</b> ${esc(simulatedReason(page.providerSource))}.</div>` : ''}
${damageBanner(page.damaged ?? [], anchors)}
${page.interrupted ? '<div class="banner">The last session was interrupted; <code>troupe resume</code> finishes the agents that had not completed.</div>' : ''}
<div class="cards">${cards(agents, timeline, page)}</div>
${scoresSection(page.scoring)}
<section><h2>Timeline</h2>
<div class="legend"><span class="key"><i style="background:#dcfce7;border:1px solid #16a34a"></i>completed</span><span class="key"><i style="background:#fee2e2;border:1px solid #dc2626"></i>failed</span><span class="key"><i style="background:#fef3c7;border:1px solid #d97706"></i>interrupted</span><span class="key"><i style="background:#64748b"></i>model request</span><span class="key"><i style="background:#cbd5e1"></i>queued for a provider slot</span><span class="key"><i style="background:#ef4444"></i>retry backoff</span><span class="key"><i style="background:#f59e0b"></i>waiting for an instruction</span><span class="key"><i class="down-key"></i>down (thread crashed)</span><span class="key"><i style="background:#475569;width:2px"></i>round start</span><span class="key"><i style="background:#fca5a5"></i>provider paused (429)</span>${toolLegend(drawn)}</div>
<p class="sub">From the run's first event; hover for details, click a row for the agent's transcript.</p>
${timelineViews(timeline, drawn, anchors)}
${agents.length > drawn.length ? `<p class="sub">${agents.length - drawn.length} more agents are not drawn.</p>` : ''}
</section>
<section><h2>Tokens by agent</h2>
<div class="legend"><span class="key"><i style="background:#3b82f6"></i>input</span><span class="key"><i style="background:#a855f7"></i>output</span></div>
${barChart(
  chartRows(agents, (agent) => [agent.usage.inputTokens, agent.usage.outputTokens], REPORT_CHART_AGENTS),
  [
    { name: 'input', className: 'input' },
    { name: 'output', className: 'output' },
  ],
  formatTokens,
)}
</section>
<section><h2>Cost by agent</h2>
${
  hasCost
    ? barChart(
        chartRows(agents, (agent) => [agent.costUsd ?? 0], REPORT_CHART_AGENTS),
        [{ name: 'cost', className: 'cost' }],
        formatCost,
      )
    : `<p class="sub">No cost was recorded${page.simulated ? ': the simulated model is free' : ' (prices are unknown for this model)'}.</p>`
}
</section>
<section><h2>Failures (${failed.length})</h2>
${failed.length === 0 ? '<p class="sub">None.</p>' : failureTable(failed, anchors)}
</section>
${page.approvals === undefined ? '' : approvalsSection(page.approvals)}
<section><h2>Agents (${agents.length})</h2>
<input type="search" id="filter" placeholder="Filter agents">
${agentTable(agents, anchors, page.scoring)}
</section>
<section id="transcripts"><h2>Transcripts</h2>
<p class="sub">What each agent saw and did, round by round. Open a round's input to see it as the model got it.</p>
${agents
  .map((agent, index) =>
    detailed.has(agent.agentId)
      ? transcriptHtml(agent, `a-${index}`, (id) => anchors.get(id), timeline.origin, index)
      : `<p class="sub" id="a-${index}">${esc(agent.agentId)}: transcript left out (the report holds ${REPORT_TRANSCRIPT_MAX_AGENTS}); <code>troupe show RUN_DIR ${esc(agent.agentId)}</code> prints it.</p>`,
  )
  .join('\n')}
</section>
<p class="sub">Generated by troupe report at ${esc(now.toISOString())}. This file is self-contained: it loads nothing from the network.</p>
</main>
${agents
  .map((agent, index) =>
    detailed.has(agent.agentId) && agent.transcript
      ? `<script type="application/json" id="d-${index}">${inputData(agent.transcript)}</script>`
      : '',
  )
  .join('')}
<script>${REPORT_SCRIPT}</script></body></html>
`;
}

/**
 * The timeline from the run's first event; when start-up took a large part of the run, a second
 * view from the first agent's start, chosen with radio buttons (CSS only).
 */
function timelineViews(
  timeline: Timeline,
  drawn: readonly ReportAgent[],
  anchors: ReadonlyMap<string, string>,
): string {
  const whole = timelineSvg(timeline, drawn, anchors);
  const firstStart = Math.min(...drawn.map((agent) => agent.start ?? Number.POSITIVE_INFINITY));
  if (!Number.isFinite(firstStart) || firstStart < timeline.duration * ZOOM_WHEN_STARTUP_SHARE) return whole;
  const from = Math.max(0, firstStart - (timeline.duration - firstStart) * 0.02);
  return `<input type="radio" name="zoom" id="zoom-run" checked><label for="zoom-run">whole run</label> <input type="radio" name="zoom" id="zoom-agents"><label for="zoom-agents">from the first agent (+${formatDuration(firstStart)}: start-up before it)</label>
<div class="view view-run">${whole}</div><div class="view view-agents">${timelineSvg(timeline, drawn, anchors, { from, to: timeline.duration })}</div>`;
}

/** Damaged journals the banner names one by one; the rest are counted. */
const BANNER_JOURNALS = 20;

/**
 * The banner of damaged journals: what the page shows of their agents leaves out what was lost,
 * or may show what was edited.
 */
function damageBanner(damaged: readonly DamagedJournal[], anchors: ReadonlyMap<string, string>): string {
  if (damaged.length === 0) return '';
  const items = damaged.slice(0, BANNER_JOURNALS).map((item) => {
    const anchor = anchors.get(item.agentId);
    const agent = anchor === undefined ? esc(item.agentId) : `<a href="#${anchor}">${esc(item.agentId)}</a>`;
    return `<li>${agent}: <code>${esc(item.journal)}</code>: ${esc(item.damage)}</li>`;
  });
  const more = damaged.length - BANNER_JOURNALS;
  if (more > 0) items.push(`<li>and ${more} more</li>`);
  return `<div class="banner damaged"><b>${damaged.length} damaged journal${damaged.length === 1 ? '' : 's'}:</b> a line is not an event or the hash chain is broken, so what this page shows of ${damaged.length === 1 ? 'its agent' : 'their agents'} leaves out what was lost or may show what was edited; check with <code>troupe verify JOURNAL</code>.<ul>${items.join('')}</ul></div>`;
}

/** Start-up (before the first agent) above this share of the run offers the zoomed view. */
const ZOOM_WHEN_STARTUP_SHARE = 0.15;

/** Agents whose transcripts the page holds: failed and interrupted first, then in order. */
function transcriptAgents(agents: readonly ReportAgent[]): Set<string> {
  const first = agents.filter((agent) => agent.status !== 'completed');
  const rest = agents.filter((agent) => agent.status === 'completed');
  return new Set([...first, ...rest].slice(0, REPORT_TRANSCRIPT_MAX_AGENTS).map((agent) => agent.agentId));
}

/**
 * The agents whose outcome stands: each plan entry's last attempt, and every agent spawned by
 * agents (as `summary.json` counts them); an entry run again after a cancel or with
 * `--retry-failed` is not counted as failed as well.
 */
function finalAgents(agents: readonly ReportAgent[]): ReportAgent[] {
  const lastAttempt = new Map<number, number>();
  for (const agent of agents) {
    if (agent.index !== null) {
      lastAttempt.set(agent.index, Math.max(lastAttempt.get(agent.index) ?? 0, agent.attempt));
    }
  }
  return agents.filter((agent) => agent.index === null || lastAttempt.get(agent.index) === agent.attempt);
}

function cards(agents: readonly ReportAgent[], timeline: Timeline, page: ReportPage): string {
  const finals = finalAgents(agents);
  // A run's are its summary's counts (one rule for summary.json, `troupe report` and this page:
  // an entry counts by its current attempt, one with no result line yet as interrupted).
  const { counts } = page;
  const count = (status: ReportAgent['status']): number =>
    counts === undefined
      ? finals.filter((a) => a.status === status).length
      : status === 'completed'
        ? counts.completed + counts.nested.completed
        : status === 'failed'
          ? counts.failed + counts.nested.failed
          : status === 'interrupted'
            ? counts.interrupted + counts.nested.interrupted
            : counts.notRun;
  const entries = finals.filter((agent) => agent.index !== null).length;
  const reruns = agents.length - finals.length;
  // Neither a plan entry nor spawned by an agent: one journal's own agent (`troupe run`, `chat`).
  const journalOwn = agents.filter((agent) => agent.index === null && agent.parentId === null).length;
  const spawned = agents.filter((agent) => agent.index === null && agent.parentId !== null).length;
  const runsNote =
    entries === 0 && journalOwn > 0
      ? undefined
      : `${entries} plan entr${entries === 1 ? 'y' : 'ies'}${reruns > 0 ? ` (${reruns} run again)` : ''}`;
  const agentsNote =
    [runsNote, spawned > 0 ? `${spawned} spawned by agents` : undefined]
      .filter((note) => note !== undefined)
      .join(' + ') || undefined;
  const sum = (value: (agent: ReportAgent) => number): number =>
    agents.reduce((total, agent) => total + value(agent), 0);
  // The totals are summary.json's: attempts with a result line, each request, tool call and token
  // once (a retry's journal starts as a copy of the attempt it continues, counted with that one).
  // Attempts with no line yet (a killed session) are not in them: a card says what they used.
  const { counted, unfinished } = countedAgents(timeline);
  const own = ownFigures(counted);
  // One estimate mark for the sums: a side is marked when any agent's was estimated.
  const estimated = counted.reduce<EstimatedUsage>(
    (marks, { usage }) =>
      usage.estimated !== true
        ? marks
        : marks.estimated !== true || marks.estimatedSide === usage.estimatedSide
          ? {
              estimated: true,
              ...(usage.estimatedSide === undefined ? {} : { estimatedSide: usage.estimatedSide }),
            }
          : { estimated: true },
    {},
  );
  const retries = own.retries;
  const restarts = sum((agent) => agent.restarts);
  const judges = judgesCost(page.scoring, agents);
  const list: [string, string, string?][] = [
    [String(agents.length), 'agents', agentsNote],
    [String(count('completed')), 'completed'],
    [
      String(count('failed')),
      'failed',
      reruns > 0 ? `last attempts only; ${reruns} earlier not counted` : undefined,
    ],
    ...(count('interrupted') > 0 ? [[String(count('interrupted')), 'interrupted'] as [string, string]] : []),
    ...(count('not run') > 0 ? [[String(count('not run')), 'not run'] as [string, string]] : []),
    [
      String(own.steps),
      'model requests',
      retries > 0 ? `${retries} retr${retries === 1 ? 'y' : 'ies'}` : undefined,
    ],
    [
      String(own.toolCalls),
      'tool calls',
      restarts > 0 ? `${restarts} restart${restarts === 1 ? '' : 's'} after crashes` : undefined,
    ],
    [
      `${formatTokenCount(own.usage.inputTokens, sideEstimated(estimated, 'input'))} / ${formatTokenCount(
        own.usage.outputTokens,
        sideEstimated(estimated, 'output'),
      )}`,
      'tokens in / out',
      estimateNote(estimated) === undefined ? undefined : `~ ${estimateNote(estimated)}`,
    ],
    [formatCost(own.costUsd), 'cost', judges === undefined ? undefined : 'judges not included'],
    ...(unfinished.length === 0 ? [] : [unfinishedCard(ownFigures(unfinished))]),
    ...(judges === undefined
      ? []
      : [
          [
            formatCost(judges.costUsd),
            'judges cost',
            `${judges.judges} judge agent${judges.judges === 1 ? '' : 's'}, not counted as plan entries`,
          ] as [string, string, string],
        ]),
    [formatDuration(page.wallTimeMs ?? timeline.duration), 'wall time'],
  ];
  return list
    .map(
      ([value, label, note]) =>
        `<div class="card"><b>${esc(value)}</b><span>${esc(label)}</span>${note ? `<small>${esc(note)}</small>` : ''}</div>`,
    )
    .join('');
}

/**
 * The card of the attempts with no result line yet, which the totals leave out: what they used so
 * far (a retry's own part only), counted once `troupe resume` ends them.
 */
function unfinishedCard(figures: OwnFigures): [string, string, string] {
  return [
    String(figures.agents),
    'not in the totals',
    `no result line yet (a session was killed): ${unfinishedText(figures)} so far; troupe resume ends them`,
  ];
}

function failureTable(agents: readonly ReportAgent[], anchors: ReadonlyMap<string, string>): string {
  const rows = agents.map(
    (agent) =>
      `<tr><td><a href="#${anchors.get(agent.agentId)}">${esc(shortId(agent.agentId))}</a></td><td>${esc(agent.agent)}</td><td class="${cls(agent.status)}">${esc(agent.status)}</td><td>${esc(agent.reason ?? '')}</td><td>${esc(agent.error ?? (agent.status === 'interrupted' ? 'the run stopped before this agent ended' : 'never started'))}</td></tr>`,
  );
  return `<table><thead><tr><th>agent id</th><th>definition</th><th>status</th><th>reason</th><th>error</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function agentTable(
  agents: readonly ReportAgent[],
  anchors: ReadonlyMap<string, string>,
  scoring: ScoringSummary | undefined,
): string {
  const items = scoredItems(scoring);
  const rows = agents.map((agent) => {
    const result = agent.result ? outcomeText(agent.result) : '';
    const time =
      agent.start !== undefined && agent.end !== undefined ? formatDuration(agent.end - agent.start) : '';
    return `<tr class="agent" data-agent="${esc(agent.agentId)}" data-t="${anchors.get(agent.agentId)}"><td>${agent.index ?? (agent.parentId !== null ? '↳' : '-')}${agent.label ? `<br><span class="tag">${esc(agent.label)}</span>` : ''}</td><td><a href="#${anchors.get(agent.agentId)}" title="${esc(agent.agentId)}">${esc(shortId(agent.agentId))}</a>${agent.parentId ? `<br><span class="sub">by ${esc(shortId(agent.parentId))}</span>` : ''}</td><td>${esc(agent.agent)}<br><span class="sub">${esc(agent.model ?? '')}</span></td><td class="${cls(agent.status)}">${esc(agent.status)}${agent.reason ? ` (${esc(agent.reason)})` : ''}</td><td class="num">${agent.rounds}${inheritedNote(agent.inherited?.rounds)}</td><td class="num">${agent.steps}${inheritedNote(agent.inherited?.steps)}</td><td class="num">${agent.toolCalls}${inheritedNote(agent.inherited?.toolCalls)}</td><td class="num">${formatTokenCount(agent.usage.inputTokens, sideEstimated(agent.usage, 'input'))}</td><td class="num">${formatTokenCount(agent.usage.outputTokens, sideEstimated(agent.usage, 'output'))}</td><td class="num">${formatCost(agent.costUsd)}</td><td class="num">${time}</td>${scoreCells(scoring, items, agent)}<td>${esc(excerpt(agent.task, 80))}${result ? `<br><span class="sub">${esc(excerpt(result, 80))}</span>` : ''}</td></tr>`;
  });
  return `<table><thead><tr><th>#</th><th>agent id</th><th>definition / model</th><th>status</th><th>rounds</th><th>requests</th><th>tools</th><th>in</th><th>out</th><th>cost</th><th>time</th>${scoreHeaders(scoring)}<th>task / result</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** Under a retry's figure: how much of it came with the journal of the attempt it continues. */
function inheritedNote(count: number | undefined): string {
  return count === undefined || count === 0 ? '' : `<br><span class="sub">${count} inherited</span>`;
}

function cls(status: string): string {
  return status.replace(' ', '-');
}
