/** Totals of a scored run: per scorer, pass rate and mean score over every plan entry. */
import { addUsage, ZERO_USAGE } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import type {
  ItemScoreSummary,
  ItemScores,
  Score,
  ScorerSpec,
  ScorerTotals,
  ScoringSummary,
} from './types.ts';

/** One plan entry and its latest scores (undefined when it has no result yet). */
export interface ScoredItem {
  readonly index: number;
  readonly id?: string;
  readonly agentId: string | null;
  readonly scores: ItemScores | undefined;
}

/**
 * Totals per scorer over `items` (every plan entry, in plan order). An entry a scorer did not
 * score counts as not passed with score 0 (`notScored`), so pass rates of a partial run are not
 * inflated by the entries that never ran.
 */
export function summarizeScores(
  scorers: readonly ScorerSpec[],
  items: readonly ScoredItem[],
): ScoringSummary {
  const totals: Record<string, ScorerTotals> = {};
  for (const spec of scorers) {
    let passed = 0;
    let errors = 0;
    let notScored = 0;
    let sum = 0;
    let usage: Usage = ZERO_USAGE;
    let cost = 0;
    for (const item of items) {
      const score = item.scores?.[spec.name];
      if (score === undefined) {
        notScored += 1;
        continue;
      }
      if (score.pass) passed += 1;
      if (score.error !== undefined) errors += 1;
      sum += score.score;
      if (score.judge) {
        usage = addUsage(usage, score.judge.usage);
        cost += score.judge.costUsd;
      }
    }
    const count = items.length;
    totals[spec.name] = {
      type: spec.type,
      items: count,
      passed,
      errors,
      notScored,
      passRate: count === 0 ? 0 : passed / count,
      meanScore: count === 0 ? 0 : sum / count,
      ...(spec.type === 'judge' ? { judgeUsage: usage, judgeCostUsd: cost } : {}),
    };
  }
  return { scorers: totals, items: items.map(itemSummary) };
}

function itemSummary(item: ScoredItem): ItemScoreSummary {
  const scores: Record<string, Omit<Score, 'judge'>> = {};
  for (const [name, { judge: _judge, ...score }] of Object.entries(item.scores ?? {})) scores[name] = score;
  return {
    index: item.index,
    ...(item.id === undefined ? {} : { id: item.id }),
    agentId: item.agentId,
    scores,
  };
}
