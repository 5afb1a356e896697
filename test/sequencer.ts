/**
 * The order test files start in. vitest runs the files it timed before longest first, but a fresh
 * clone has no timings: files then start in path order, and a 30-40 s file that starts last (the
 * thread-fault cases, the packed package) made the whole run ~25 s longer on 2 cores. The files
 * measured slowest (bench/RESULTS.md, fast15) start first; the rest keep vitest's order. Only the
 * order changes, never what runs.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SLOWEST_FIRST = [
  'test/e2e/package.test.ts',
  'test/engines/contract.test.ts',
  'test/engines/threads/faults.test.ts',
  'test/examples/examples.test.ts',
  'test/mcp/threads.test.ts',
  'test/cli/approvals.test.ts',
  'test/engines/redis/cluster.test.ts',
  'test/engines/redis/misconfiguration.test.ts',
  'test/cli/report-drilldown.test.ts',
  'test/cli/kill-resume.test.ts',
  'test/engines/redis/approvals.test.ts',
];

export default class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification): number => {
      const index = SLOWEST_FIRST.indexOf(path.relative(file.project.config.root, file.moduleId));
      return index === -1 ? SLOWEST_FIRST.length : index;
    };
    // Array.prototype.sort is stable: files of equal rank keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
