/** Scores in the terminal: one line per scorer, and a table for `troupe score`. */
import type { ScoringSummary } from '../eval/types.ts';
import { excerpt, formatCost, table } from './format.ts';

/** `verdict (jsonPath) 3/4 passed (75.0%), mean 0.75` for each scorer. */
export function scorerLines(scoring: ScoringSummary): string[] {
  return Object.entries(scoring.scorers).map(([name, totals]) => {
    const extra = [
      totals.errors > 0 ? `${totals.errors} could not be scored` : '',
      totals.notScored > 0 ? `${totals.notScored} not scored` : '',
      totals.judgeCostUsd !== undefined && totals.judgeCostUsd > 0
        ? `judges cost ${formatCost(totals.judgeCostUsd)}`
        : '',
    ].filter((part) => part !== '');
    return `${name} (${totals.type}): ${totals.passed}/${totals.items} passed (${percent(totals.passRate)}), mean ${totals.meanScore.toFixed(2)}${extra.length > 0 ? `; ${extra.join(', ')}` : ''}`;
  });
}

/** The per-item table of `troupe score`: one row per plan entry, one column per scorer. */
export function scoringTable(scoring: ScoringSummary, detailChars = 60): string[] {
  const names = Object.keys(scoring.scorers);
  const rows = [
    ['#', 'ID', ...names.map((name) => name.toUpperCase()), 'WHY'],
    ...scoring.items.map((item) => {
      const why = names
        .map((name) => {
          const score = item.scores[name];
          const text = score?.error ?? (score?.pass === false ? score.detail : undefined);
          return text === undefined ? undefined : `${name}: ${text}`;
        })
        .filter((text): text is string => text !== undefined);
      return [
        String(item.index),
        item.id ?? '',
        ...names.map((name) => {
          const score = item.scores[name];
          if (score === undefined) return '-';
          return `${score.pass ? 'pass' : 'FAIL'} ${score.score.toFixed(2)}${score.error === undefined ? '' : ' (error)'}`;
        }),
        excerpt(why.join('; '), detailChars),
      ];
    }),
  ];
  return table(rows);
}

/** 0.755 -> "75.5%". */
export function percent(rate: number): string {
  return `${(rate * 100).toFixed(1)}%`;
}
