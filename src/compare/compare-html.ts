/**
 * `troupe compare --html`: one self-contained HTML page (inline CSS and a few lines of script,
 * nothing fetched) with both runs, the scorers' pass rates side by side, the totals and every item
 * with its outcome, score, token, cost and latency changes, outputs and differing tool calls.
 * Every piece of text from the runs goes through `esc`.
 */
import { COMPARE_JSON_PIECE_CHARS, COMPARE_OUTPUT_CHARS } from '../constants.ts';
import { formatCost, formatDuration, formatTokens } from '../run-dir/format.ts';
import { esc } from '../run-dir/html-charts.ts';
import { securityPolicyMeta } from '../run-dir/html-page.ts';
import { SIMULATED_REASON } from '../run-dir/provider-choice.ts';
import { percent } from '../run-dir/scoring-text.ts';
import type { ItemComparison, ItemSide, RunComparison, RunTotals } from './compare.ts';
import { points } from './compare-text.ts';
import type { GateResult } from './gate.ts';
import { formatToolCall, type ToolCallCount } from './tool-calls.ts';

const STYLE = `
:root{--fg:#0f172a;--muted:#64748b;--line:#e2e8f0;--ok:#16a34a;--bad:#dc2626;--warn:#d97706;--bg:#f8fafc;--a:#94a3b8;--b:#3b82f6}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 10px}
.sub{color:var(--muted)}.banner{margin:14px 0;padding:10px 14px;border-radius:8px;background:#fef3c7;border:1px solid #fcd34d}
.runs{display:grid;grid-template-columns:1fr 1fr;gap:10px;margin-top:14px}.run{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 12px}
.run b{font-size:15px}.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin-top:16px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 12px}.card b{display:block;font-size:20px}.card span{color:var(--muted);font-size:12px}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 16px;margin-top:16px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.up{color:var(--ok)}.down{color:var(--bad)}.same{color:var(--muted)}.pass{color:var(--ok)}.fail{color:var(--bad)}
.bars{display:flex;flex-direction:column;gap:3px;min-width:180px}.bar{height:9px;border-radius:3px}.bar.a{background:var(--a)}.bar.b{background:var(--b)}
.legend{display:flex;gap:12px;color:var(--muted);font-size:12px;margin-bottom:8px}.legend i{display:inline-block;width:12px;height:10px;border-radius:2px;margin-right:4px;vertical-align:middle}
tr.item.regressed{background:#fef2f2}tr.item.improved{background:#f0fdf4}tr.item.unchanged{color:var(--muted)}
body.changed-only tr.item.unchanged{display:none}
details pre{white-space:pre-wrap;word-break:break-word;background:#f1f5f9;padding:8px;border-radius:6px;max-height:280px;overflow:auto;margin:4px 0}
.calls{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}.calls .minus{color:var(--bad)}.calls .plus{color:var(--ok)}
.gate{font-weight:600}.controls{display:flex;gap:14px;align-items:center;margin-bottom:8px}
input[type=search]{padding:6px 10px;border:1px solid var(--line);border-radius:6px;width:260px}
`;

const SCRIPT = `
var only=document.getElementById('changed-only');if(only){only.addEventListener('change',function(){document.body.classList.toggle('changed-only',only.checked)})}
var filter=document.getElementById('filter');if(filter){filter.addEventListener('input',function(){var q=filter.value.toLowerCase();
  document.querySelectorAll('tr.item').forEach(function(row){row.style.display=row.textContent.toLowerCase().indexOf(q)<0?'none':''})})}
`;

/** The comparison page. */
export function renderCompareHtml(
  comparison: RunComparison,
  gates: readonly GateResult[],
  now: Date = new Date(),
): string {
  return [...compareHtmlPieces(comparison, gates, now)].join('');
}

/**
 * {@link renderCompareHtml}'s page in pieces, gathered up to COMPARE_JSON_PIECE_CHARS (64 KiB) of
 * text (one longer item row is a piece of its own): made an item row at a time, so the page of
 * 100,000 items is never one string (`troupe compare --html` writes the pieces as they come).
 * Joined, they are `renderCompareHtml`'s page.
 */
export function* compareHtmlPieces(
  comparison: RunComparison,
  gates: readonly GateResult[],
  now: Date = new Date(),
): Generator<string> {
  let pending: string[] = [];
  let pendingChars = 0;
  for (const part of pageParts(comparison, gates, now)) {
    pending.push(part);
    pendingChars += part.length;
    if (pendingChars >= COMPARE_JSON_PIECE_CHARS) {
      yield pending.join('');
      pending = [];
      pendingChars = 0;
    }
  }
  if (pending.length > 0) yield pending.join('');
}

function* pageParts(comparison: RunComparison, gates: readonly GateResult[], now: Date): Generator<string> {
  const { a, b } = comparison;
  const title = `troupe compare ${a.runId} vs ${b.runId}`;
  const changed = comparison.items.filter((item) => item.changed).length;
  const tokensA = a.usage.inputTokens + a.usage.outputTokens;
  const tokensB = b.usage.inputTokens + b.usage.outputTokens;
  const cards = [
    ['items matched', String(comparison.matched)],
    ['changed items', String(changed)],
    ['regressed / fixed', `${comparison.regressed} / ${comparison.fixed}`],
    ['only in A / only in B', `${comparison.onlyA} / ${comparison.onlyB}`],
    ['tokens A → B', `${formatTokens(tokensA)} → ${formatTokens(tokensB)}`],
    ['cost A → B', `${formatCost(a.costUsd)} → ${formatCost(b.costUsd)}`],
    ['mean latency A → B', `${latency(a.meanLatencyMs)} → ${latency(b.meanLatencyMs)}`],
  ]
    .map(
      ([label, value]) =>
        `<div class="card"><b>${esc(value ?? '')}</b><span>${esc(label ?? '')}</span></div>`,
    )
    .join('');
  const simulated = a.simulated || b.simulated;
  yield `<!doctype html>
<html lang="en"><head><meta charset="utf-8">${securityPolicyMeta(SCRIPT)}<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body class="changed-only"><main>
<h1>${esc(a.name ?? 'A')} vs ${esc(b.name ?? 'B')}</h1>
<div class="sub">Items are matched by their plan <code>id</code>, else by position. Pass rates are over the matched items.</div>
${simulated ? `<div class="banner"><b>Simulated model</b> in ${a.simulated && b.simulated ? 'both runs' : a.simulated ? 'run A' : 'run B'}: ${esc(SIMULATED_REASON)}.</div>` : ''}
<div class="runs">${runCard('A', a)}${runCard('B', b)}</div>
<div class="cards">${cards}</div>
${gates.length > 0 ? `<section id="gates"><h2>Gates</h2>${gates.map(gateLine).join('')}</section>` : ''}
<section id="scorers"><h2>Scorers</h2>${scorerTable(comparison)}</section>
<section id="items"><h2>Items (${comparison.items.length})</h2>
<div class="controls"><label><input type="checkbox" id="changed-only" checked> changed items only (${changed})</label><input type="search" id="filter" placeholder="Filter items"></div>
`;
  yield* itemTable(comparison);
  yield `
</section>
<p class="sub">Generated by troupe compare at ${esc(now.toISOString())}. This file is self-contained: it loads nothing from the network.</p>
</main><script>${SCRIPT}</script></body></html>
`;
}

function runCard(label: string, run: RunTotals): string {
  return `<div class="run"><b>${label}: ${esc(run.name ?? run.runId)}</b><div class="sub">run ${esc(run.runId)} · provider ${esc(run.provider)}${run.model ? ` · model ${esc(run.model)}` : ''}</div><div class="sub">${run.items} item(s): ${run.completed} completed, ${run.failed} failed${run.notRun ? `, ${run.notRun} not run` : ''} · wall time ${esc(formatDuration(run.wallTimeMs))}</div><div class="sub">${esc(run.dir)}</div></div>`;
}

function gateLine(gate: GateResult): string {
  return `<p class="gate ${gate.ok ? 'pass' : 'fail'}">${esc(`${gate.scorer}:${gate.minDelta}`)}: ${gate.ok ? 'ok' : 'FAILED'} — pass rate ${esc(percent(gate.passRateA))} → ${esc(percent(gate.passRateB))} (${esc(points(gate.delta))})</p>`;
}

function scorerTable(comparison: RunComparison): string {
  const scorers = Object.values(comparison.scorers);
  if (scorers.length === 0) return '<p class="sub">Neither run declares scorers.</p>';
  const rows = scorers.map(
    (s) =>
      `<tr><td>${esc(s.name)}${s.declaredIn === 'both' ? '' : ` <span class="sub">(only in ${s.declaredIn.toUpperCase()})</span>`}</td><td><div class="bars"><div class="bar a" style="width:${Math.round(s.passRateA * 100)}%"></div><div class="bar b" style="width:${Math.round(s.passRateB * 100)}%"></div></div></td><td class="num">${s.passedA}/${s.items} (${esc(percent(s.passRateA))})</td><td class="num">${s.passedB}/${s.items} (${esc(percent(s.passRateB))})</td><td class="num ${direction(s.delta)}">${esc(points(s.delta))}</td><td class="num">${s.meanA.toFixed(2)}</td><td class="num">${s.meanB.toFixed(2)}</td><td class="num up">${s.improved}</td><td class="num down">${s.regressed}</td></tr>`,
  );
  return `<div class="legend"><span><i style="background:#94a3b8"></i>A</span><span><i style="background:#3b82f6"></i>B</span></div><table><thead><tr><th>scorer</th><th>pass rate</th><th>A</th><th>B</th><th>change</th><th>mean A</th><th>mean B</th><th>better</th><th>worse</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** The items' table, a row at a time. */
function* itemTable(comparison: RunComparison): Generator<string> {
  const names = Object.keys(comparison.scorers);
  yield `<table><thead><tr><th>item</th><th>outcome</th>${names.map((name) => `<th>${esc(name)}</th>`).join('')}<th>tokens</th><th>cost</th><th>latency</th><th>task, outputs, tool calls</th></tr></thead><tbody>`;
  for (const item of comparison.items) {
    const worse =
      item.outcome === 'regressed' ||
      Object.values(item.scores).some((delta) => delta.change === 'regressed');
    const better =
      item.outcome === 'fixed' || Object.values(item.scores).some((delta) => delta.change === 'improved');
    const rowClass = !item.changed ? 'unchanged' : worse ? 'regressed' : better ? 'improved' : 'changed';
    yield `<tr class="item ${rowClass}" data-key="${esc(item.key)}"><td>${esc(item.id ?? item.key)}</td><td>${esc(outcome(item))}</td>${names.map((name) => `<td>${scoreCell(item, name)}</td>`).join('')}<td class="num">${delta(item.tokensDelta, (v) => formatTokens(v))}</td><td class="num">${delta(item.costDeltaUsd, (v) => formatCost(v))}</td><td class="num">${delta(item.latencyDeltaMs, (v) => formatDuration(v))}</td><td>${details(item, comparison.toolCallsCompared)}</td></tr>`;
  }
  yield '</tbody></table>';
}

/** A note that a side's output is cut (the comparison keeps its first characters only). */
function outputCut(side: ItemSide | undefined): string {
  return side !== undefined && side.outputChars > COMPARE_OUTPUT_CHARS
    ? ` <span class="sub">(the first ${COMPARE_OUTPUT_CHARS} of ${side.outputChars} characters)</span>`
    : '';
}

function details(item: ItemComparison, toolCallsCompared: boolean): string {
  const parts = [
    `<details><summary>task${item.taskProblem ? ' (unreadable)' : ''}</summary>${item.taskProblem ? `<p class="sub">${esc(`${item.taskProblem.code}: ${item.taskProblem.message}`)}</p>` : ''}<pre>${esc(item.task)}</pre></details>`,
  ];
  if (item.a || item.b) {
    parts.push(
      `<details><summary>outputs${item.a && item.b && item.a.outputDigest !== item.b.outputDigest ? ' (differ)' : ''}</summary><b>A</b>${outputCut(item.a)}<pre>${esc(item.a?.output ?? '(not in A)')}</pre><b>B</b>${outputCut(item.b)}<pre>${esc(item.b?.output ?? '(not in B)')}</pre></details>`,
    );
  }
  const calls = item.toolCalls;
  if (calls === undefined) {
    if (item.a && item.b)
      parts.push(
        `<span class="sub">tool calls: ${toolCallsCompared ? 'a journal is missing' : 'not compared (--tool-calls)'}</span>`,
      );
  } else if (calls.onlyA.length + calls.onlyB.length === 0) {
    parts.push(`<span class="sub">same tool calls (${calls.common})</span>`);
  } else {
    const line = (sign: string, cls: string, call: ToolCallCount): string =>
      `<div class="${cls}">${sign} ${esc(formatToolCall(call, 160))}</div>`;
    parts.push(
      `<details open><summary>tool calls differ (${calls.common} in common)</summary><div class="calls">${calls.onlyA.map((c) => line('−', 'minus', c)).join('')}${calls.onlyB.map((c) => line('+', 'plus', c)).join('')}</div></details>`,
    );
  }
  return parts.join('');
}

function outcome(item: ItemComparison): string {
  const status = (side: ItemSide | undefined): string =>
    side === undefined
      ? 'absent'
      : side.status === 'failed'
        ? `failed (${side.reason ?? '?'})`
        : side.status.replace('_', ' ');
  return item.outcome === 'same' ? status(item.a) : `${status(item.a)} → ${status(item.b)}`;
}

function scoreCell(item: ItemComparison, name: string): string {
  const d = item.scores[name];
  if (d === undefined) return '<span class="sub">–</span>';
  const one = (
    score: { pass: boolean; score: number; detail?: string; error?: string } | undefined,
  ): string =>
    score === undefined
      ? '<span class="sub">–</span>'
      : `<span class="${score.pass ? 'pass' : 'fail'}" title="${esc(score.error ?? score.detail ?? '')}">${score.pass ? 'pass' : 'fail'} ${score.score.toFixed(2)}</span>`;
  return d.change === 'same' ? one(d.a) : `${one(d.a)} → ${one(d.b)}`;
}

function delta(value: number | undefined, format: (value: number) => string): string {
  if (value === undefined) return '<span class="sub">–</span>';
  return `<span class="${direction(-value)}">${value >= 0 ? '+' : '−'}${esc(format(Math.abs(value)))}</span>`;
}

/** `up` for a gain, `down` for a loss (pass rates; for costs the caller negates). */
function direction(value: number): string {
  return value > 0 ? 'up' : value < 0 ? 'down' : 'same';
}

function latency(ms: number | null): string {
  return ms === null ? '–' : formatDuration(ms);
}
