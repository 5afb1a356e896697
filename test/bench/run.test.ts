/**
 * Smoke test of the benchmark runner: the entry points load, run a cheap benchmark in a child
 * process and write the JSON shape `npm run bench` promises. Nothing here asserts a time.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { formatTable } from '../../bench/run.ts';
import { figure, skipped, untargeted } from '../../bench/support/figures.ts';
import { BENCHES } from '../../bench/support/registry.ts';
import { quantile } from '../../bench/support/stats.ts';
import { lineChart } from '../../bench/support/svg.ts';
import { checked } from '../../bench/support/targets.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const scratch = mkdtempSync(path.join(tmpdir(), 'troupe-bench-test-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Report {
  machine: { cpu: string; cores: number; memoryGiB: number; stolenCpuSeconds?: number };
  node: string;
  commit: string;
  quick: boolean;
  results: Record<
    string,
    { value: number | null; unit: string; target: string | null; meets: boolean | null }
  >;
}

describe('bench runner', () => {
  it('runs the quick routing benchmark in a child and writes every figure with value, unit, target, meets', async () => {
    const out = path.join(scratch, 'latest.json');
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', '--quick', '--only', 'routing', '--out', out],
      { cwd: repoRoot },
    );
    const report = JSON.parse(readFileSync(out, 'utf8')) as Report;
    expect(report.quick).toBe(true);
    expect(report.node).toBe(process.version);
    expect(report.machine.cores).toBeGreaterThan(0);
    // Linux accounts a guest's stolen time; elsewhere the field is left out of the JSON.
    if (existsSync('/proc/stat')) {
      expect(report.machine.stolenCpuSeconds).toBeGreaterThanOrEqual(0);
      expect(stdout).toContain('CPU stolen by the hypervisor');
    } else expect(report.machine.stolenCpuSeconds).toBeUndefined();
    expect(typeof report.commit).toBe('string');
    const p50 = report.results['routing.instructionP50Us'];
    expect(p50).toMatchObject({ unit: 'us', target: '<= 150' });
    expect(typeof p50?.value).toBe('number');
    expect(typeof p50?.meets).toBe('boolean');
    expect(report.results['routing.instructionP99Us']).toMatchObject({
      unit: 'us',
      target: null,
      meets: null,
    });
    expect(stdout).toContain('routing.instructionP50Us');
  });

  it('rejects an unknown benchmark name and lists the known ones', async () => {
    const failure = run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--only', 'nope'], {
      cwd: repoRoot,
    });
    await expect(failure).rejects.toMatchObject({ stderr: expect.stringContaining('Known: projection') });
  });
});

describe('bench figures', () => {
  it('a figure meets its target by the comparison it names', () => {
    expect(figure(0.9, 'ratio', '<=', 1).meets).toBe(true);
    expect(figure(1, 'ratio', '<', 1).meets).toBe(false);
    expect(figure(49.9, 'x', '>=', 50)).toMatchObject({ meets: false, target: '>= 50' });
    expect(untargeted(12.3456, 'us')).toEqual({ value: 12.35, unit: 'us', target: null, meets: null });
    expect(skipped('ratio', null, 'no redis')).toMatchObject({
      value: null,
      meets: null,
      skipped: 'no redis',
    });
  });

  it("the registry names issue 22's targets, and the figures the benchmarks compute check the same", () => {
    const targets = Object.fromEntries(
      BENCHES.flatMap((bench) => bench.figures.map((spec) => [spec.name, spec.target])),
    );
    expect(targets).toMatchObject({
      'fanout.overhead': '<= 0.67',
      'fanout.agentRoundsPerSec': '>= 10000',
      'fanout.firstRunOverhead': null,
      'fanout.latencyEfficiency': '<= 1.25',
      cpuPerRequestUs: null,
      'cpuPerRequestUs.main': null,
      'routing.instructionP50Us': '<= 150',
      'memory.waitingAgentBytes': '<= 32768',
      'peer.openaiAgentsRatio': '<= 0.2',
      'peer.langgraphRatio': null,
      'scaleout.redisVsThreads': '<= 1.5',
    });
    for (const [name, target] of Object.entries(targets)) expect(checked(name, 1, 'x').target).toBe(target);
    expect(checked('fanout.overhead', 0.7, 'ratio').meets).toBe(false);
    expect(checked('fanout.overhead', 0.67, 'ratio').meets).toBe(true);
    expect(checked('memory.waitingAgentBytes', 40_000, 'bytes').meets).toBe(false);
    expect(checked('cpuPerRequestUs', 300, 'µs')).toMatchObject({ target: null, meets: null });
  });

  it('quantiles interpolate between the closest ranks', () => {
    expect(quantile([4, 1, 3, 2], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4, 5], 0.99)).toBeCloseTo(4.96);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it('the table shows skipped figures with their reason', () => {
    const table = formatTable({
      'a.b': figure(1.5, 'ratio', '<=', 1),
      'c.d': skipped('ratio', null, 'not here'),
    });
    expect(table).toMatch(/a\.b\s+1\.5\s+ratio\s+<= 1\s+NO/);
    expect(table).toContain('skipped: not here');
  });

  it('the makespan chart draws one path and one legend entry per series', () => {
    const svg = lineChart({
      title: 'Makespan',
      xLabel: 'agents',
      yLabel: 'ms',
      series: [
        {
          label: 'supervisor',
          color: '#00f',
          points: [
            [100, 50],
            [200, 90],
          ],
        },
        {
          label: 'in-process',
          color: '#f00',
          points: [
            [100, 70],
            [200, 150],
          ],
        },
      ],
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg).toContain('in-process');
  });
});
