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
  it('stops after two runs in a row that are not more than 5 % faster than the fastest before', async () => {
    const s = side([1000, 700, 560, 540, 545, 300]);
    const runs = await warmUntilSteady(s.run, { min: 2, max: 8 });
    expect(runs.map((r) => r.cpuMs)).toEqual([1000, 700, 560, 540, 545]);
    expect(s.calls()).toBe(5);
  });

  it('goes on after a single slow run while the side is still getting faster', async () => {
    // A Supervisor still compiling, timed on the machine's bump (820) under the old rule.
    const s = side([975, 725, 820, 600, 480, 470, 480, 100]);
    const runs = await warmUntilSteady(s.run, { min: 2, max: 10 });
    expect(runs.map((r) => r.cpuMs)).toEqual([975, 725, 820, 600, 480, 470, 480]);
  });

  it('compares with the fastest run so far, not only the previous one', async () => {
    // 560 is not 5 % below 580, but it is not below 500 at all: steady.
    const s = side([1000, 500, 580, 560, 100]);
    expect(await warmUntilSteady(s.run, { min: 2, max: 8 })).toHaveLength(4);
  });

  it('runs at least min times, even when the side is warm from the start', async () => {
    const s = side([500, 500, 500, 500, 500]);
    expect(await warmUntilSteady(s.run, { min: 4, max: 8 })).toHaveLength(4);
    const t = side([500, 500, 500, 500, 500]);
    expect(await warmUntilSteady(t.run, { min: 2, max: 8 })).toHaveLength(3);
  });

  it('runs at most max times on a side that keeps getting faster', async () => {
    const s = side([1000, 800, 600, 400, 200]);
    expect(await warmUntilSteady(s.run, { min: 2, max: 3 })).toHaveLength(3);
  });

  it('runs once when max is 1 (the quick run)', async () => {
    const s = side([1000, 500]);
    expect(await warmUntilSteady(s.run, { min: 1, max: 1 })).toHaveLength(1);
  });
});
