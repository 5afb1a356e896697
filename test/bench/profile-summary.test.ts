/** The profile summary's sample windows: only samples inside them count, each at the median interval. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { summarize } from '../../bench/support/profile-summary.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const frame = (functionName: string) => ({ functionName, url: '', lineNumber: 0 });

/**
 * root -> a, root -> b. Samples at 100,000 µs (a), 101,000 (b), 102,000 (a), 120,000 (b: after an
 * 18 ms gap), 121,000 (a): the median interval is 1 ms.
 */
function profileFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-profile-summary-'));
  dirs.push(dir);
  const file = path.join(dir, 'one.cpuprofile');
  const profile = {
    startTime: 100_000,
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 3] },
      { id: 2, callFrame: frame('a') },
      { id: 3, callFrame: frame('b') },
    ],
    samples: [2, 3, 2, 3, 2],
    timeDeltas: [0, 1000, 1000, 18_000, 1000],
  };
  writeFileSync(file, JSON.stringify(profile));
  return file;
}

function selfMs(file: string, windows?: readonly (readonly [number, number])[]): Record<string, number> {
  const summary = summarize(file, 10, undefined, undefined, windows);
  return Object.fromEntries(summary.self.map((f) => [f.frame, f.ms]));
}

describe('summarize with windows', () => {
  it('bills each sample its time delta without windows', () => {
    expect(selfMs(profileFile())).toEqual({ a: 2, b: 19 });
  });

  it('keeps only samples inside a window, each at the median interval', () => {
    // The sample at 120,000 is in a window: it counts 1 ms, not the 18 ms gap before it.
    expect(
      selfMs(profileFile(), [
        [119_500, 120_500],
        [99_500, 100_500],
      ]),
    ).toEqual({ a: 1, b: 1 });
  });

  it('counts nothing outside every window', () => {
    const summary = summarize(profileFile(), 10, undefined, undefined, [[110_000, 115_000]]);
    expect(summary.totalMs).toBe(0);
    expect(summary.self).toEqual([]);
  });
});
