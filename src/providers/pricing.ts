/** Model prices for receipts: a small table of list prices, overridable per provider. */
import type { Usage } from './types.ts';

/** USD per one million tokens. */
export interface ModelPrice {
  readonly inputPerMTok: number;
  /** Price of cached input tokens; defaults to `inputPerMTok` when omitted. */
  readonly cachedInputPerMTok?: number;
  readonly outputPerMTok: number;
}

/** Prices keyed by model name (without a date suffix). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

const price = (inputPerMTok: number, cachedInputPerMTok: number, outputPerMTok: number): ModelPrice => ({
  inputPerMTok,
  cachedInputPerMTok,
  outputPerMTok,
});

/**
 * Public list prices (standard tier) of a few common models. Dated snapshots such as
 * `gpt-4o-2024-08-06` or `claude-sonnet-4-5-20250929` use their base model's price. Models not
 * listed get no cost (`costUsd: undefined`); pass `prices` to a provider to add or correct some.
 */
export const DEFAULT_PRICES: PriceTable = {
  'gpt-4o': price(2.5, 1.25, 10),
  'gpt-4o-mini': price(0.15, 0.075, 0.6),
  'gpt-4.1': price(2, 0.5, 8),
  'gpt-4.1-mini': price(0.4, 0.1, 1.6),
  'gpt-4.1-nano': price(0.1, 0.025, 0.4),
  'gpt-5': price(1.25, 0.125, 10),
  'gpt-5-mini': price(0.25, 0.025, 2),
  'gpt-5-nano': price(0.05, 0.005, 0.4),
  'o4-mini': price(1.1, 0.275, 4.4),
  'claude-opus-4-7': price(5, 0.5, 25),
  'claude-opus-4-6': price(5, 0.5, 25),
  'claude-opus-4-5': price(5, 0.5, 25),
  'claude-opus-4-1': price(15, 1.5, 75),
  'claude-sonnet-4-6': price(3, 0.3, 15),
  'claude-sonnet-4': price(3, 0.3, 15),
  'claude-sonnet-4-5': price(3, 0.3, 15),
  'claude-haiku-4-5': price(1, 0.1, 5),
  'claude-3-5-haiku': price(0.8, 0.08, 4),
  'claude-3-haiku': price(0.25, 0.03, 1.25),
};

const SNAPSHOT_SUFFIX = /-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

/** The price of `model` in `table`, trying the name without its snapshot date second. */
export function priceFor(model: string, table: PriceTable = DEFAULT_PRICES): ModelPrice | undefined {
  return table[model] ?? table[model.replace(SNAPSHOT_SUFFIX, '')];
}

/** Cost in USD of `usage` at `modelPrice`. */
export function costOf(usage: Usage, modelPrice: ModelPrice): number {
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens);
  const cachedPrice = modelPrice.cachedInputPerMTok ?? modelPrice.inputPerMTok;
  const micro =
    (usage.inputTokens - cached) * modelPrice.inputPerMTok +
    cached * cachedPrice +
    usage.outputTokens * modelPrice.outputPerMTok;
  return micro / 1_000_000;
}
