/**
 * Runs the benchmark suite: each benchmark in a fresh child process, then prints a table and writes
 * bench/results/latest.json `{ machine, node, commit, quick, results: { <name>: { value, unit,
 * target, meets } }, details, ... }` with every figure name, measured, skipped or failed.
 *
 *   npm run bench                      the full suite (several minutes)
 *   npm run bench -- --quick           the reduced set (under a minute on an idle 2-core machine)
 *   npm run bench -- --only routing,memory [--quick]
 *   npm run bench -- --profile         also write a V8 CPU profile of every child to bench/results/profiles
 *   npm run bench -- --out FILE        write the JSON somewhere else
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RUN_ONE, runInChild, SCRATCH_ROOT_ENV } from './support/child.ts';
import type { BenchOutput, Figure } from './support/figures.ts';
import { commit, loadAverage, machine, stolenSeconds } from './support/machine.ts';
import { BENCHES, type BenchEntry } from './support/registry.ts';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.dirname(BENCH_DIR);

/** The file `npm run bench` writes. */
export const LATEST_JSON = path.join(BENCH_DIR, 'results', 'latest.json');

interface RunReport {
  readonly machine: ReturnType<typeof machine>;
  readonly node: string;
  readonly commit: string;
  readonly quick: boolean;
  readonly date: string;
  readonly durationMs: number;
  readonly command: string;
  readonly results: Record<string, Figure>;
  readonly details: Record<string, unknown>;
  /** Per benchmark: wall time of its child, and its error when it failed. */
  readonly benches: Record<
    string,
    { readonly wallMs: number; readonly error?: string; readonly skipped?: string }
  >;
}

function placeholder(bench: BenchEntry, reason: string): Record<string, Figure> {
  return Object.fromEntries(
    bench.figures.map((f) => [
      f.name,
      { value: null, unit: f.unit, target: f.target, meets: null, skipped: reason },
    ]),
  );
}

function isBenchOutput(value: unknown): value is BenchOutput {
  return typeof value === 'object' && value !== null && 'figures' in value && 'details' in value;
}

function cell(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

function formatValue(figure: Figure): string {
  if (figure.value === null) return '-';
  return Math.abs(figure.value) >= 1000 ? figure.value.toLocaleString('en-US') : String(figure.value);
}

/** The results as a fixed-width table. */
export function formatTable(results: Readonly<Record<string, Figure>>): string {
  const rows = Object.entries(results).map(([name, f]) => [
    name,
    formatValue(f),
    f.unit,
    f.target ?? '-',
    f.meets === null ? (f.skipped ? `skipped: ${f.skipped}` : '-') : f.meets ? 'yes' : 'NO',
  ]);
  const header = ['figure', 'value', 'unit', 'target', 'meets'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string =>
    r
      .map((c, i) => cell(c, i === 4 ? 0 : (widths[i] ?? 0), i === 1))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

type BenchRuns = Record<string, { wallMs: number; error?: string; skipped?: string }>;

/** Runs the selected benchmarks and writes the report. */
export async function runSuite(options: {
  readonly quick: boolean;
  readonly only: readonly string[];
  readonly profile: boolean;
  readonly out: string;
}): Promise<RunReport> {
  const unknown = options.only.filter((name) => !BENCHES.some((b) => b.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown benchmark(s): ${unknown.join(', ')}. Known: ${BENCHES.map((b) => b.name).join(', ')}`,
    );
  }
  const selected = options.only.length === 0 ? BENCHES : BENCHES.filter((b) => options.only.includes(b.name));
  const started = performance.now();
  const host = machine();
  const stolenAtStart = stolenSeconds();
  // Read before the children run: the tree may change while a long run goes on.
  const measuredCommit = commit(REPO_ROOT);
  const results: Record<string, Figure> = {};
  const details: Record<string, unknown> = {};
  const benches: BenchRuns = {};
  // Every child's scratch directories, removed only once all have run (see SCRATCH_ROOT_ENV).
  const scratchRoot = mkdtempSync(path.join(tmpdir(), 'troupe-bench-run-'));
  process.env[SCRATCH_ROOT_ENV] = scratchRoot;
  try {
    for (const bench of selected) await runBench(bench, options, { results, details, benches });
  } finally {
    delete process.env[SCRATCH_ROOT_ENV];
    rmSync(scratchRoot, { recursive: true, force: true });
  }
  const report: RunReport = {
    machine: {
      ...host,
      loadAverage: { start: host.loadAverage.start, end: loadAverage() },
      stolenCpuSeconds: stolenDuring(stolenAtStart, stolenSeconds()),
    },
    node: process.version,
    commit: measuredCommit,
    quick: options.quick,
    date: new Date().toISOString(),
    durationMs: Math.round(performance.now() - started),
    command: `npm run bench --${process.argv.slice(2).length > 0 ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
    results,
    details,
    benches,
  };
  mkdirSync(path.dirname(options.out), { recursive: true });
  writeFileSync(options.out, `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

/** Runs one benchmark in its child process and adds what it reports to `into`. */
async function runBench(
  bench: BenchEntry,
  options: { readonly quick: boolean; readonly profile: boolean },
  into: {
    readonly results: Record<string, Figure>;
    readonly details: Record<string, unknown>;
    readonly benches: BenchRuns;
  },
): Promise<void> {
  const { results, details, benches } = into;
  const reason = bench.unavailable?.({ quick: options.quick });
  if (reason !== undefined) {
    Object.assign(results, placeholder(bench, reason));
    benches[bench.name] = { wallMs: 0, skipped: reason };
    process.stderr.write(`- ${bench.name}: skipped (${reason})\n`);
    return;
  }
  process.stderr.write(`- ${bench.name}: running${options.quick ? ' (quick)' : ''}...\n`);
  const benchStart = performance.now();
  const profileDir = path.join(BENCH_DIR, 'results', 'profiles');
  try {
    const output = await runInChild(RUN_ONE, {
      execArgv: [
        ...bench.execArgv,
        ...(options.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profileDir, bench.name)}`] : []),
      ],
      args: [bench.name, ...(options.quick ? ['--quick'] : [])],
      timeoutMs: bench.timeoutMs({ quick: options.quick }),
      cwd: REPO_ROOT,
    });
    if (!isBenchOutput(output)) throw new Error('the child printed a result of the wrong shape');
    Object.assign(results, placeholder(bench, 'not reported'), output.figures);
    details[bench.name] = output.details;
    benches[bench.name] = { wallMs: Math.round(performance.now() - benchStart) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    Object.assign(results, placeholder(bench, `failed: ${message}`));
    benches[bench.name] = { wallMs: Math.round(performance.now() - benchStart), error: message };
    process.stderr.write(`- ${bench.name}: FAILED (${message})\n`);
  }
  process.stderr.write(`- ${bench.name}: ${((performance.now() - benchStart) / 1000).toFixed(1)} s\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string', multiple: true, default: [] },
      profile: { type: 'boolean', default: false },
      out: { type: 'string', default: LATEST_JSON },
    },
  });
  const only = (values.only ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  const report = await runSuite({
    quick: values.quick ?? false,
    only,
    profile: values.profile ?? false,
    out: path.resolve(values.out ?? LATEST_JSON),
  });
  const { cpu, cores, memoryGiB, loadAverage: load, stolenCpuSeconds } = report.machine;
  const stolen = stolenCpuSeconds === undefined ? '' : `; CPU stolen by the hypervisor ${stolenCpuSeconds} s`;
  console.log('');
  console.log(formatTable(report.results));
  console.log('');
  console.log(
    `${report.quick ? 'quick' : 'full'} run, ${(report.durationMs / 1000).toFixed(1)} s; ${cpu}, ${cores} cores, ${memoryGiB} GiB, node ${report.node}, commit ${report.commit}; load average ${load.start} -> ${load.end}${stolen}`,
  );
  console.log(`wrote ${path.relative(process.cwd(), values.out ?? LATEST_JSON)}`);
  if (Object.values(report.benches).some((b) => b.error !== undefined)) process.exitCode = 1;
}

function stolenDuring(start: number | undefined, end: number | undefined): number | undefined {
  return start === undefined || end === undefined ? undefined : Math.round((end - start) * 100) / 100;
}

const entry = process.argv[1];
if (entry !== undefined && path.resolve(entry) === fileURLToPath(import.meta.url)) {
  await main();
}
