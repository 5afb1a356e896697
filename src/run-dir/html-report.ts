/**
 * `troupe report --html`: one self-contained HTML file (inline CSS, SVG and a few lines of script;
 * nothing is fetched) with the run's totals, a timeline of agents across threads, token and cost
 * charts, failures, and every agent's result.
 */
import { readApprovals } from './approvals.ts';
import { REPORT_CHART_AGENTS, REPORT_TIMELINE_MAX_AGENTS } from './constants.ts';
import { excerpt, formatCost, formatDuration, formatTokenCount, formatTokens } from './format.ts';
import { approvalsSection } from './html-approvals.ts';
import { barChart, chartRows, esc, timelineSvg, toolLegend } from './html-charts.ts';
import { SIMULATED_REASON } from './provider-choice.ts';
import { outcomeText } from './results.ts';
import type { RunDirContents } from './run-dir.ts';
import { summarize } from './summary.ts';
import type { ReportAgent, Timeline } from './timeline.ts';

const STYLE = `
:root{--fg:#0f172a;--muted:#64748b;--line:#e2e8f0;--ok:#16a34a;--bad:#dc2626;--warn:#d97706;--bg:#f8fafc}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}
.sub{color:var(--muted)}.banner{margin:14px 0;padding:10px 14px;border-radius:8px;background:#fef3c7;border:1px solid #fcd34d}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:10px;margin-top:16px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 12px}.card b{display:block;font-size:20px}.card span{color:var(--muted);font-size:12px}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 16px;margin-top:16px}section h2{margin-top:0}
svg text{font-size:11px;fill:var(--fg)}svg .muted,svg .tick-label{fill:var(--muted)}svg .tick-label{text-anchor:middle}
svg .tick{stroke:var(--line)}svg .group{font-weight:600}svg .group-line{stroke:#cbd5e1}
.row .bar{fill:#dcfce7;stroke:var(--ok)}.status-failed .bar{fill:#fee2e2;stroke:var(--bad)}.status-interrupted .bar{fill:#fef3c7;stroke:var(--warn)}
.row .model{fill:#94a3b8}.row .wait{fill:#f59e0b;opacity:.75}.row .tool-failed{stroke:var(--bad);stroke-width:1.5}
.row .round{stroke:#475569;stroke-width:1}.row.hl .bar{stroke-width:3}.row.hl .label{font-weight:700}
.chart .input{fill:#3b82f6}.chart .output{fill:#a855f7}.chart .cost{fill:#0d9488}.chart .value{fill:var(--muted)}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0;color:var(--muted);font-size:12px}.key i{display:inline-block;width:12px;height:10px;margin-right:4px;border-radius:2px;vertical-align:middle}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.agent{cursor:pointer}tr.agent:hover{background:#f1f5f9}
.completed{color:var(--ok)}.failed{color:var(--bad)}.interrupted,.not-run{color:var(--warn)}
details pre{white-space:pre-wrap;word-break:break-word;background:#f1f5f9;padding:8px;border-radius:6px;max-height:320px;overflow:auto}
input[type=search]{padding:6px 10px;border:1px solid var(--line);border-radius:6px;width:260px;margin-bottom:8px}
`;

const SCRIPT = `
document.querySelectorAll('tr.agent').forEach(function(row){row.addEventListener('click',function(){
  var id=row.getAttribute('data-agent');document.querySelectorAll('.row.hl').forEach(function(g){g.classList.remove('hl')});
  var g=document.querySelector('.row[data-agent="'+id+'"]');if(g){g.classList.add('hl');g.scrollIntoView({block:'center',behavior:'smooth'})}})});
var filter=document.getElementById('filter');if(filter){filter.addEventListener('input',function(){var q=filter.value.toLowerCase();
  document.querySelectorAll('tr.agent').forEach(function(row){row.style.display=row.textContent.toLowerCase().indexOf(q)<0?'none':''})})}
`;

/** The HTML report of a run directory. */
export function renderHtmlReport(
  contents: RunDirContents,
  timeline: Timeline,
  now: Date = new Date(),
): string {
  const { plan } = contents;
  const summary = contents.summary ?? summarize(plan, contents.results, [], now);
  const agents = timeline.agents;
  const drawn = agents.slice(0, REPORT_TIMELINE_MAX_AGENTS);
  const failed = agents.filter((agent) => agent.status !== 'completed');
  const title = `troupe run ${plan.runId}`;
  const cards = [
    ['agents planned', String(summary.counts.planned)],
    ['completed', String(summary.counts.completed)],
    ['failed', String(summary.counts.failed)],
    ['not run', String(summary.counts.notRun)],
    ['spawned by agents', String(summary.counts.nested.completed + summary.counts.nested.failed)],
    [
      'tokens in / out',
      `${formatTokenCount(summary.usage.inputTokens, summary.usage.estimated)} / ${formatTokenCount(summary.usage.outputTokens, summary.usage.estimated)}${summary.usage.estimated ? ' (~ estimated: the server reported no usage)' : ''}`,
    ],
    ['cost', formatCost(summary.costUsd)],
    ['wall time', formatDuration(summary.wallTimeMs || timeline.duration)],
  ]
    .map(
      ([label, value]) =>
        `<div class="card"><b>${esc(value ?? '')}</b><span>${esc(label ?? '')}</span></div>`,
    )
    .join('');
  const tokenRows = chartRows(
    agents,
    (agent) => [agent.usage.inputTokens, agent.usage.outputTokens],
    REPORT_CHART_AGENTS,
  );
  const costRows = chartRows(agents, (agent) => [agent.costUsd ?? 0], REPORT_CHART_AGENTS);
  const hasCost = agents.some((agent) => (agent.costUsd ?? 0) > 0);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body><main>
<h1>${esc(plan.name ?? title)}</h1>
<div class="sub">run ${esc(plan.runId)} · provider ${esc(plan.provider.name)}${summary.model ? ` · model ${esc(summary.model)}` : ''} · ${plan.threads} thread(s), ${plan.concurrency} at a time · created ${esc(plan.createdAt)}${plan.planFile ? ` · plan ${esc(plan.planFile)}` : ''}</div>
${plan.provider.simulated ? `<div class="banner"><b>Simulated model:</b> ${esc(SIMULATED_REASON)}.</div>` : ''}
${summary.interrupted ? '<div class="banner">The last session was interrupted; <code>troupe resume</code> finishes the agents that had not completed.</div>' : ''}
<div class="cards">${cards}</div>
<section><h2>Timeline</h2>
<div class="legend"><span class="key"><i style="background:#dcfce7;border:1px solid #16a34a"></i>completed</span><span class="key"><i style="background:#fee2e2;border:1px solid #dc2626"></i>failed</span><span class="key"><i style="background:#fef3c7;border:1px solid #d97706"></i>interrupted</span><span class="key"><i style="background:#94a3b8"></i>model turn</span><span class="key"><i style="background:#f59e0b"></i>waiting for an instruction</span><span class="key"><i style="background:#475569;width:2px"></i>round start</span>${toolLegend(drawn)}</div>
${timelineSvg(timeline, drawn)}
${agents.length > drawn.length ? `<p class="sub">${agents.length - drawn.length} more agents are not drawn.</p>` : ''}
</section>
<section><h2>Tokens by agent</h2>
<div class="legend"><span class="key"><i style="background:#3b82f6"></i>input</span><span class="key"><i style="background:#a855f7"></i>output</span></div>
${barChart(
  tokenRows,
  [
    { name: 'input', className: 'input' },
    { name: 'output', className: 'output' },
  ],
  formatTokens,
)}
</section>
<section><h2>Cost by agent</h2>
${hasCost ? barChart(costRows, [{ name: 'cost', className: 'cost' }], formatCost) : `<p class="sub">No cost was recorded${plan.provider.simulated ? ': the simulated model is free' : ' (prices are unknown for this model)'}.</p>`}
</section>
<section><h2>Failures (${failed.length})</h2>
${failed.length === 0 ? '<p class="sub">None.</p>' : failureTable(failed)}
</section>
${approvalsSection(readApprovals(contents.paths.root))}
<section><h2>Agents (${agents.length})</h2>
<input type="search" id="filter" placeholder="Filter agents">
${agentTable(agents)}
</section>
<p class="sub">Generated by troupe report at ${esc(now.toISOString())}. This file is self-contained: it loads nothing from the network.</p>
</main><script>${SCRIPT}</script></body></html>
`;
}

function failureTable(agents: readonly ReportAgent[]): string {
  const rows = agents.map(
    (agent) =>
      `<tr><td>${esc(agent.agentId)}</td><td>${esc(agent.agent)}</td><td class="${cls(agent.status)}">${esc(agent.status)}</td><td>${esc(agent.reason ?? '')}</td><td>${esc(agent.error ?? (agent.status === 'interrupted' ? 'the run stopped before this agent ended' : 'never started'))}</td></tr>`,
  );
  return `<table><thead><tr><th>agent id</th><th>definition</th><th>status</th><th>reason</th><th>error</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function agentTable(agents: readonly ReportAgent[]): string {
  const rows = agents.map((agent) => {
    const result = agent.result ? outcomeText(agent.result) : '';
    const full = agent.result?.result === undefined ? result : JSON.stringify(agent.result.result, null, 2);
    const time =
      agent.start !== undefined && agent.end !== undefined ? formatDuration(agent.end - agent.start) : '';
    return `<tr class="agent" data-agent="${esc(agent.agentId)}"><td>${agent.index ?? '↳'}</td><td>${esc(agent.agentId)}${agent.parentId ? `<br><span class="sub">by ${esc(agent.parentId)}</span>` : ''}</td><td>${esc(agent.agent)}</td><td class="${cls(agent.status)}">${esc(agent.status)}${agent.reason ? ` (${esc(agent.reason)})` : ''}</td><td class="num">${agent.rounds}</td><td class="num">${formatTokenCount(agent.usage.inputTokens, agent.usage.estimated)}</td><td class="num">${formatTokenCount(agent.usage.outputTokens, agent.usage.estimated)}</td><td class="num">${formatCost(agent.costUsd)}</td><td class="num">${time}</td><td><details><summary>${esc(excerpt(agent.task, 70))}</summary><pre>${esc(agent.task)}</pre></details>${result ? `<details><summary>${esc(excerpt(result, 70))}</summary><pre>${esc(full)}</pre></details>` : ''}</td></tr>`;
  });
  return `<table><thead><tr><th>#</th><th>agent id</th><th>definition</th><th>status</th><th>rounds</th><th>in</th><th>out</th><th>cost</th><th>time</th><th>task / result</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function cls(status: string): string {
  return status.replace(' ', '-');
}
