/** What `troupe replay` finds to replay in a recorded run directory. */
import { describe, expect, it } from 'vitest';
import { recordedJournals } from '../../src/run-dir/replay-plan.ts';
import { runDirPaths } from '../../src/run-dir/run-dir.ts';
import { agentIdFor } from '../../src/run-dir/run-plan.ts';

/** `lines` behind a proxy that counts how many times one of them is read. */
function counted<T extends object>(lines: T[]): { lines: T[]; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(lines, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
      return Reflect.get(target, key, receiver);
    },
  });
  return { lines: proxy, reads: () => reads };
}

describe('recordedJournals', () => {
  it("reads the result lines once, not once per plan entry, and picks each entry's last attempt", () => {
    const idPrefix = 'run-x';
    const entries = 300;
    const runs = Array.from({ length: entries }, (_, index) => ({
      index,
      agent: 'echo',
      agentId: agentIdFor(idPrefix, index),
      task: `task ${index}`,
      context: [],
      metadata: {},
      source: { file: 'plan.yaml', line: index + 1, column: 1 },
    }));
    // Every entry ran once; entry 7 ran again (its second attempt's line comes last).
    const results = [
      ...runs.map((run) => ({ index: run.index, agentId: run.agentId })),
      { index: 7, agentId: agentIdFor(idPrefix, 7, 2) },
    ];
    // Entry 3 left no journal.
    const files = new Set(results.filter((line) => line.index !== 3).map((line) => `${line.agentId}.jsonl`));
    const paths = runDirPaths('/tmp/recorded');
    const { lines, reads } = counted(results);
    const { journals, unrecorded } = recordedJournals({ runs, idPrefix }, paths, lines, files);

    expect(reads()).toBeLessThanOrEqual(results.length);
    expect(journals).toHaveLength(entries);
    expect(journals[7]).toBe(`${paths.journals}/${agentIdFor(idPrefix, 7, 2)}.jsonl`);
    expect(journals[8]).toBe(`${paths.journals}/${agentIdFor(idPrefix, 8)}.jsonl`);
    expect(journals[3]).toBeNull();
    expect(unrecorded).toEqual([{ index: 3, journal: `${paths.journals}/${agentIdFor(idPrefix, 3)}.jsonl` }]);
  });
});
