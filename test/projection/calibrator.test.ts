import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.ts';
import { Calibrator } from '../../src/projection/calibrator.ts';

describe('Calibrator', () => {
  it('leaves estimates alone before any receipt', () => {
    const calibrator = new Calibrator();
    expect(calibrator.factor('gpt-4o')).toBe(1);
    expect(calibrator.adjust('gpt-4o', 1234)).toBe(1234);
  });

  it('takes the first receipt’s ratio, then an exponentially weighted average', () => {
    const calibrator = new Calibrator({ smoothing: 0.5 });
    calibrator.record({ model: 'm', actualInputTokens: 1200, estimatedTokens: 1000 });
    expect(calibrator.factor('m')).toBeCloseTo(1.2);
    calibrator.record({ model: 'm', actualInputTokens: 1400, estimatedTokens: 1000 });
    expect(calibrator.factor('m')).toBeCloseTo(1.3);
    expect(calibrator.adjust('m', 1000)).toBe(1300);
    expect(calibrator.snapshot()).toEqual({ m: { factor: expect.closeTo(1.3), samples: 2 } });
  });

  it('converges on a steady ratio so later estimates track what the provider bills', () => {
    const calibrator = new Calibrator();
    for (let i = 0; i < 30; i++)
      calibrator.record({ model: 'claude', actualInputTokens: 1150, estimatedTokens: 1000 });
    expect(calibrator.adjust('claude', 2000)).toBe(2300);
  });

  it('keeps one factor per model', () => {
    const calibrator = new Calibrator();
    calibrator.record({ model: 'a', actualInputTokens: 200, estimatedTokens: 100 });
    expect(calibrator.factor('a')).toBe(2);
    expect(calibrator.factor('b')).toBe(1);
  });

  it('never lowers an estimate below raw x safety floor', () => {
    const strict = new Calibrator();
    strict.record({ model: 'm', actualInputTokens: 600, estimatedTokens: 1000 });
    expect(strict.factor('m')).toBeCloseTo(0.6);
    expect(strict.adjust('m', 1000)).toBe(1000);
    const lenient = new Calibrator({ safetyFloor: 0.8 });
    lenient.record({ model: 'm', actualInputTokens: 600, estimatedTokens: 1000 });
    expect(lenient.adjust('m', 1000)).toBe(800);
  });

  it('clamps outlandish ratios', () => {
    const calibrator = new Calibrator();
    calibrator.record({ model: 'm', actualInputTokens: 100_000, estimatedTokens: 10 });
    expect(calibrator.factor('m')).toBe(4);
  });

  it('ignores receipts without usable counts', () => {
    const calibrator = new Calibrator();
    expect(calibrator.record({ model: 'm', actualInputTokens: 0, estimatedTokens: 100 })).toBe(false);
    expect(calibrator.record({ model: 'm', actualInputTokens: 100, estimatedTokens: 0 })).toBe(false);
    expect(calibrator.record({ model: 'm', actualInputTokens: Number.NaN, estimatedTokens: 5 })).toBe(false);
    expect(calibrator.factor('m')).toBe(1);
  });

  it('starts from an earlier snapshot', () => {
    const first = new Calibrator();
    first.record({ model: 'm', actualInputTokens: 150, estimatedTokens: 100 });
    const second = new Calibrator({ initial: first.snapshot() });
    expect(second.adjust('m', 100)).toBe(150);
  });

  it('rejects invalid options with the option named', () => {
    for (const options of [
      { smoothing: 0 },
      { smoothing: 1.5 },
      { safetyFloor: -1 },
      { minRatio: 3, maxRatio: 2 },
    ]) {
      let error: unknown;
      try {
        new Calibrator(options);
      } catch (caught) {
        error = caught;
      }
      expect(isTroupeError(error) && error.code).toBe('invalid_option');
    }
  });
});
