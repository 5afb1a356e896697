/**
 * The demo's model (examples/orchestrator/orchestrating-model.ts) is priced like the simulated
 * model it wraps: a request cancelled mid-turn gets estimated usage priced from `priceOf`, so a
 * cancelled demo must not report its workers' cost as unknown.
 */
import { describe, expect, it } from 'vitest';
import { createOrchestratingModel } from '../../examples/orchestrator/orchestrating-model.ts';
import { costOf } from '../../src/providers/pricing.ts';
import { SimulatedProvider } from '../../src/providers/simulated.ts';

describe('the orchestrating model of the demo', () => {
  it("has the simulated model's (free) price, so a cancelled request costs $0, not unknown", () => {
    const model = createOrchestratingModel();
    const price = model.priceOf?.('simulated');
    expect(price).toEqual(new SimulatedProvider().priceOf('simulated'));
    const usage = { inputTokens: 2270, outputTokens: 12, cachedInputTokens: 0, reasoningTokens: 0 };
    expect(price === undefined ? undefined : costOf(usage, price)).toBe(0);
  });
});
