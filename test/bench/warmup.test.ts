/** The benchmarks' warm-up rule: full-size runs until a side stops getting faster. */
import { describe, expect, it } from 'vitest';
import { warmUntilSteady } from '../../bench/support/warmup.ts';

/** A side whose runs cost these CPU times, one after another. */
function side(cpu: readonly number[]): { run: () => Promise<{ cpuMs: number }>; calls: () => number } {
  let calls = 0;
  return {
    run: async () => ({ cpuMs: cpu[calls++] ?? Number.NaN }),
    calls: () => calls,
  };
}

describe('warmUntilSteady', () => {
  it('stops after the first run that is not more than 5 % faster than the one before', async () => {
    const s = side([1000, 700, 560, 540, 300]);
    const runs = await warmUntilSteady(s.run, { min: 2, max: 8 });
    expect(runs.map((r) => r.cpuMs)).toEqual([1000, 700, 560, 540]);
    expect(s.calls()).toBe(4);
  });

  it('runs at least min times, even when the side is warm from the start', async () => {
    const s = side([500, 500, 500, 500]);
    expect(await warmUntilSteady(s.run, { min: 3, max: 8 })).toHaveLength(3);
  });

  it('runs at most max times on a side that keeps getting faster', async () => {
    const s = side([1000, 800, 600, 400, 200]);
    expect(await warmUntilSteady(s.run, { min: 2, max: 3 })).toHaveLength(3);
  });

  it('counts a slower run as warm', async () => {
    const s = side([600, 900, 100]);
    expect(await warmUntilSteady(s.run, { min: 2, max: 8 })).toHaveLength(2);
  });
});
