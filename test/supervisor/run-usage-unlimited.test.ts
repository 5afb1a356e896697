/**
 * `supervisor.runUsage` without `runLimits`: the per-request receipts are not sent then (nothing
 * listens for them), yet the totals must still be what the agents spent, counted as they end.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('runUsage without runLimits', () => {
  it('totals the tokens of every ended agent', async () => {
    const sup = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { simulated: { kind: 'simulated' } },
    });
    supervisor = sup;
    const outcomes = await Promise.all(
      ['first', 'second'].map((task) => sup.spawn('worker', { task: `Answer ${task}.` }).result),
    );
    const tokens = outcomes.reduce(
      (sum, outcome) => sum + outcome.usage.inputTokens + outcome.usage.outputTokens,
      0,
    );
    expect(tokens).toBeGreaterThan(0);
    expect(sup.runUsage).toMatchObject({ usedTokens: tokens, usedCostUsd: 0, spent: undefined });
  });
});
