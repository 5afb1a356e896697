/**
 * The HTML report's scores: a section with one row per scorer, one column per scorer in the agent
 * table, and what the judges cost. Everything comes from the summary's `scoring` (`summary.json`,
 * or the same computed from the results), the figures the terminal report prints.
 */
import type { ScoringSummary } from '../eval/types.ts';
import { excerpt, formatCost, shortId } from './format.ts';
import { esc } from './html-charts.ts';
import { percent } from './scoring-text.ts';
import type { ReportAgent } from './timeline.ts';

/** The section, or '' when the run has no scorers. */
export function scoresSection(scoring: ScoringSummary | undefined): string {
  if (scoring === undefined) return '';
  const entries = Object.entries(scoring.scorers);
  if (entries.length === 0) return '';
  const judged = entries.some(([, totals]) => totals.type === 'judge');
  const rows = entries.map(
    ([name, totals]) =>
      `<tr><td>${esc(name)}</td><td>${esc(totals.type)}</td><td class="num">${totals.passed}/${totals.items}</td><td class="num">${esc(percent(totals.passRate))}</td><td class="num">${totals.meanScore.toFixed(2)}</td><td class="num">${totals.errors}</td><td class="num">${totals.notScored}</td>${judged ? `<td class="num">${totals.judgeCostUsd === undefined ? '' : esc(formatCost(totals.judgeCostUsd))}</td>` : ''}</tr>`,
  );
  return `<section id="scores"><h2>Scores (${entries.length} scorer${entries.length === 1 ? '' : 's'}, ${scoring.items.length} plan entr${scoring.items.length === 1 ? 'y' : 'ies'})</h2>
<p class="sub">Each scorer over every plan entry's latest result; an entry not scored (not run yet) counts as not passed, score 0.</p>
<table class="scores"><thead><tr><th>scorer</th><th>type</th><th>passed / entries</th><th>pass rate</th><th>mean score</th><th>could not be scored</th><th>not scored</th>${judged ? '<th>judges cost</th>' : ''}</tr></thead><tbody>${rows.join('')}</tbody></table>
</section>`;
}

/**
 * What the judges cost in all (USD; null when one judge's cost is unknown), and how many judge
 * agents the scores record; undefined when the run has no judge scorer.
 */
export function judgesCost(
  scoring: ScoringSummary | undefined,
  agents: readonly ReportAgent[],
): { readonly costUsd: number | null; readonly judges: number } | undefined {
  if (scoring === undefined) return undefined;
  const judgeScorers = Object.entries(scoring.scorers).filter(([, totals]) => totals.type === 'judge');
  if (judgeScorers.length === 0) return undefined;
  let costUsd: number | null = 0;
  for (const [, totals] of judgeScorers) {
    const cost = totals.judgeCostUsd === undefined ? 0 : totals.judgeCostUsd;
    costUsd = costUsd === null || cost === null ? null : costUsd + cost;
  }
  const scored = new Set(scoring.items.map((item) => item.agentId));
  const judges = agents
    .filter((agent) => scored.has(agent.agentId))
    .reduce(
      (count, agent) =>
        count + judgeScorers.filter(([name]) => agent.result?.scores?.[name]?.judge !== undefined).length,
      0,
    );
  return { costUsd, judges };
}

/** The agent table's header cells: one per scorer. */
export function scoreHeaders(scoring: ScoringSummary | undefined): string {
  return Object.keys(scoring?.scorers ?? {})
    .map((name) => `<th>${esc(name)}</th>`)
    .join('');
}

/**
 * The agent table's cells of `agent`: its scores when it is the scored (latest) attempt of a plan
 * entry, empty for earlier attempts and agents spawned by agents.
 */
export function scoreCells(
  scoring: ScoringSummary | undefined,
  items: ReadonlyMap<string, ScoringSummary['items'][number]>,
  agent: ReportAgent,
): string {
  if (scoring === undefined) return '';
  const item = items.get(agent.agentId);
  return Object.keys(scoring.scorers)
    .map((name) => {
      if (item === undefined) return '<td></td>';
      const score = item.scores[name];
      if (score === undefined) return '<td class="sub">not scored</td>';
      const why = score.error ?? score.detail;
      const judge = agent.result?.scores?.[name]?.judge;
      return `<td class="score"><span class="${score.pass ? 'completed' : 'failed'}">${score.pass ? 'pass' : 'FAIL'}</span> ${score.score.toFixed(2)}${score.error === undefined ? '' : ' (error)'}${why ? `<br><span class="sub" title="${esc(why)}">${esc(excerpt(why, 60))}</span>` : ''}${judge ? `<br><span class="sub" title="${esc(judge.agentId)}">judge ${esc(shortId(judge.agentId))}, ${esc(formatCost(judge.costUsd))}</span>` : ''}</td>`;
    })
    .join('');
}

/** The summary's items by the agent id of the result they score. */
export function scoredItems(
  scoring: ScoringSummary | undefined,
): Map<string, ScoringSummary['items'][number]> {
  const items = new Map<string, ScoringSummary['items'][number]>();
  for (const item of scoring?.items ?? []) if (item.agentId !== null) items.set(item.agentId, item);
  return items;
}
