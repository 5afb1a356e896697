/**
 * Summarises V8 CPU profiles (`node --cpu-prof`, or `npm run bench -- --profile`): per profile
 * (one per thread), the top frames by self time and by inclusive time, with paths made relative to
 * the repository. This is how bench/RESULTS.md explains a missed target.
 *
 *   node --import tsx bench/support/profile-summary.ts <file.cpuprofile | dir> [--top 15] [--match RE]
 *
 * `--match` ranks only frames whose name or file matches the regular expression (e.g.
 * `--match 'src/|workers/'` for troupe's own code, `--match journal` for one area).
 * `--between FROM,TO` keeps only samples taken between two readings of the monotonic clock in µs
 * (`process.hrtime.bigint() / 1000n`, the clock V8 stamps profiles with on Linux), so start-up
 * and shutdown can be cut away from a steady-state window.
 * `--windows FILE` keeps only samples inside any of the windows FILE lists (JSON `[fromUs, toUs]`
 * pairs on the same clock, e.g. `path-cpu.ts --windows=FILE`), each sample counted once at the
 * profile's median interval: in windows much shorter than the sampler's real period (V8's sampler
 * falls behind its `--cpu-prof-interval` on a busy or virtualised machine), a sample's time delta
 * would bill the window for the gap before it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median } from './stats.ts';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly startTime: number;
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** A frame's share of one profile. */
export interface FrameTime {
  readonly frame: string;
  readonly ms: number;
  readonly percent: number;
}

/** One thread's profile, summarised. */
export interface ProfileSummary {
  readonly file: string;
  readonly totalMs: number;
  /** Time not spent idle (program, GC and everything below them). */
  readonly busyMs: number;
  readonly self: readonly FrameTime[];
  readonly inclusive: readonly FrameTime[];
}

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const IDLE = '(idle)';

function frameName(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (frame.url === '') return name;
  let where = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  if (where.startsWith(REPO_ROOT)) where = path.relative(REPO_ROOT, where);
  where = where.replace(/^node_modules\//, '');
  return `${name} ${where}:${frame.lineNumber + 1}`;
}

/** Self and inclusive time per frame of one profile. */
export function summarize(
  file: string,
  top: number,
  match?: RegExp,
  between?: readonly [fromUs: number, toUs: number],
  windows?: readonly (readonly [fromUs: number, toUs: number])[],
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  let at = profile.startTime;
  const sorted = windows === undefined ? undefined : [...windows].sort((a, b) => a[0] - b[0]);
  const interval = sorted === undefined ? 0 : median(profile.timeDeltas);
  let nextWindow = 0;
  profile.samples.forEach((id, index) => {
    let delta = profile.timeDeltas[index] ?? 0;
    at += delta;
    if (between && (at < between[0] || at > between[1])) return;
    if (sorted !== undefined) {
      // Samples come in time order: windows that ended before this one are done with.
      while (nextWindow < sorted.length && (sorted[nextWindow]?.[1] ?? 0) < at) nextWindow += 1;
      const window = sorted[nextWindow];
      if (window === undefined || at < window[0]) return;
      delta = interval;
    }
    totalUs += delta;
    const node = byId.get(id);
    if (!node) return;
    const name = frameName(node.callFrame);
    if (name === IDLE) idleUs += delta;
    self.set(name, (self.get(name) ?? 0) + delta);
    const seen = new Set<string>();
    for (let up: number | undefined = id; up !== undefined; up = parent.get(up)) {
      const frame = byId.get(up);
      if (!frame) break;
      const key = frameName(frame.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + delta);
    }
  });
  const busyUs = totalUs - idleUs;
  const rank = (times: Map<string, number>, skip: (name: string) => boolean): FrameTime[] =>
    [...times.entries()]
      .filter(([name]) => !skip(name) && (match === undefined || match.test(name)))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([frame, us]) => ({
        frame,
        ms: Math.round(us / 100) / 10,
        percent: busyUs > 0 ? Math.round((us / busyUs) * 1000) / 10 : 0,
      }));
  const structural = new Set(['(root)', '(program)', IDLE, '(anonymous)']);
  return {
    file: path.basename(file),
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    self: rank(self, (name) => name === IDLE),
    inclusive: rank(inclusive, (name) => structural.has(name)),
  };
}

function profilesIn(target: string): string[] {
  if (!statSync(target).isDirectory()) return [target];
  return readdirSync(target)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()
    .map((name) => path.join(target, name));
}

function print(summary: ProfileSummary): void {
  console.log(
    `\n${summary.file}: ${summary.totalMs} ms sampled, ${summary.busyMs} ms busy (percent of busy)`,
  );
  console.log('  self:');
  for (const f of summary.self)
    console.log(`    ${f.percent.toFixed(1).padStart(5)}%  ${String(f.ms).padStart(8)} ms  ${f.frame}`);
  console.log('  inclusive:');
  for (const f of summary.inclusive) {
    console.log(`    ${f.percent.toFixed(1).padStart(5)}%  ${String(f.ms).padStart(8)} ms  ${f.frame}`);
  }
}

const entry = process.argv[1];
if (entry !== undefined && path.resolve(entry) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: 'string', default: '15' },
      match: { type: 'string' },
      between: { type: 'string' },
      windows: { type: 'string' },
    },
  });
  const window = values.between?.split(',').map(Number);
  const between =
    window?.length === 2 && window.every(Number.isFinite)
      ? ([window[0], window[1]] as [number, number])
      : undefined;
  const windows =
    values.windows === undefined
      ? undefined
      : (JSON.parse(readFileSync(values.windows, 'utf8')) as [number, number][]);
  const top = Number.parseInt(values.top ?? '15', 10);
  const match = values.match === undefined ? undefined : new RegExp(values.match);
  for (const target of positionals)
    for (const file of profilesIn(target)) print(summarize(file, top, match, between, windows));
}
