/**
 * Where the kernel put each thread another thread woke, and how long it took to run: the thread
 * hop of the routing path (the main thread's `postMessage` waking a parked actor host) as the
 * scheduler saw it, from a `perf` trace of the scheduler's `sched_waking` and `sched_switch`
 * events. A wake goes to the waker's own CPU, to another idle CPU or to another busy one, and the
 * woken thread gets its CPU by preempting the waker, once the waker blocks, from idle (a halted
 * vCPU woken by an interrupt) or after some other thread. bench/RESULTS.md (lead, session 12)
 * shows why the split matters on a VM whose idle vCPUs halt at once.
 *
 *   perf sched record -a -o sched.data sleep 3      # while a routing run is in its steady state
 *   perf script -i sched.data -F tid,cpu,time,event,trace > sched.txt
 *   node --import tsx bench/support/wake-placement.ts sched.txt --waker PID [--wakees TID,TID]
 *
 * PID is the benchmark process's pid, which is its main thread's id (steady-profile.ts prints it).
 * Without `--wakees`, the wakees are the two threads the waker woke most often (`--top N` for
 * another count): in a routing run, the two actor hosts, which it wakes once per instruction.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isMain } from './child.ts';
import { quantile } from './stats.ts';

/** Where a woken thread was queued, relative to the thread that woke it. */
export type Placement = 'waker cpu' | 'other cpu, idle' | 'other cpu, busy';
/** How the woken thread got a CPU: what ran on it just before. */
export type Handover =
  | 'preempted the waker'
  | 'after the waker blocked'
  | 'from idle'
  | 'after another thread';

/** One kind of wake: how many, and the µs from the wake to the woken thread running. */
export interface WakeGroup {
  readonly placement: Placement;
  readonly handover: Handover;
  readonly count: number;
  readonly share: number;
  readonly p50Us: number;
  readonly p90Us: number;
}

/** Idle is pid 0 (`swapper`) in `sched_switch`. */
const IDLE = '0';
const LINE = /^\s*(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(sched_waking|sched_switch):\s+(.*)$/;

/** One scheduler event of the trace: a thread woken, or a CPU switched to another thread. */
export type SchedEvent =
  | {
      readonly kind: 'waking';
      /** The waking thread, the CPU it ran on, and when (seconds). */
      readonly tid: string;
      readonly cpu: number;
      readonly at: number;
      readonly woken: string;
      readonly targetCpu: number;
    }
  | {
      readonly kind: 'switch';
      readonly cpu: number;
      readonly at: number;
      readonly prev: string;
      readonly prevState: string;
      readonly next: string;
    };

/**
 * The `sched_waking` and `sched_switch` events of `perf script -F tid,cpu,time,event,trace` text,
 * in order; other lines are skipped.
 */
export function parseSched(text: string): SchedEvent[] {
  const events: SchedEvent[] = [];
  for (const line of text.split('\n')) {
    const match = LINE.exec(line);
    if (match === null) continue;
    const [, tid = '', cpuText, time, kind, fields = ''] = match;
    const cpu = Number(cpuText);
    const at = Number(time);
    if (kind === 'sched_waking') {
      const woken = / pid=(\d+) /.exec(` ${fields} `)?.[1];
      const target = /target_cpu=(\d+)/.exec(fields)?.[1];
      if (woken === undefined || target === undefined) continue;
      events.push({ kind: 'waking', tid, cpu, at, woken, targetCpu: Number(target) });
      continue;
    }
    const switched = /prev_pid=(\d+) .*prev_state=(\S+) .*next_pid=(\d+)/.exec(fields);
    if (switched === null) continue;
    const [, prev = '', prevState = '', next = ''] = switched;
    events.push({ kind: 'switch', cpu, at, prev, prevState, next });
  }
  return events;
}

/** The `top` threads `waker` woke most often, most woken first. */
export function mostWoken(events: readonly SchedEvent[], waker: string, top: number): string[] {
  const counts = new Map<string, number>();
  for (const event of events) {
    if (event.kind === 'waking' && event.tid === waker) {
      counts.set(event.woken, (counts.get(event.woken) ?? 0) + 1);
    }
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([tid]) => tid);
}

/** Groups every wake of a thread in `wakees` by `waker`, largest group first. */
export function wakePlacement(
  events: readonly SchedEvent[],
  waker: string,
  wakees: ReadonlySet<string>,
): WakeGroup[] {
  /** What runs on each CPU, as the trace last switched it. */
  const running = new Map<number, string>();
  /** Wakes not yet followed by the wakee running: when, and where it was queued. */
  const pending = new Map<string, { readonly at: number; readonly placement: Placement }>();
  const delays = new Map<string, { placement: Placement; handover: Handover; us: number[] }>();
  for (const event of events) {
    if (event.kind === 'waking') {
      const { tid, cpu, targetCpu, woken } = event;
      if (tid !== waker || !wakees.has(woken)) continue;
      // A CPU the trace has not switched yet: what runs there is not known.
      if (targetCpu !== cpu && !running.has(targetCpu)) continue;
      const placement: Placement =
        targetCpu === cpu
          ? 'waker cpu'
          : running.get(targetCpu) === IDLE
            ? 'other cpu, idle'
            : 'other cpu, busy';
      pending.set(woken, { at: event.at, placement });
      continue;
    }
    const { cpu, next, prev, prevState, at } = event;
    running.set(cpu, next);
    const wake = pending.get(next);
    if (wake === undefined) continue;
    pending.delete(next);
    const handover: Handover =
      prev === waker
        ? prevState.startsWith('R')
          ? 'preempted the waker'
          : 'after the waker blocked'
        : prev === IDLE
          ? 'from idle'
          : 'after another thread';
    const key = `${wake.placement}|${handover}`;
    let group = delays.get(key);
    if (group === undefined) {
      group = { placement: wake.placement, handover, us: [] };
      delays.set(key, group);
    }
    group.us.push((at - wake.at) * 1e6);
  }
  const total = [...delays.values()].reduce((sum, group) => sum + group.us.length, 0);
  return [...delays.values()]
    .map((group) => ({
      placement: group.placement,
      handover: group.handover,
      count: group.us.length,
      share: group.us.length / total,
      p50Us: quantile(group.us, 0.5),
      p90Us: quantile(group.us, 0.9),
    }))
    .sort((a, b) => b.count - a.count);
}

if (isMain(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { waker: { type: 'string' }, wakees: { type: 'string' }, top: { type: 'string' } },
  });
  const file = positionals[0];
  const top = Number(values.top ?? 2);
  if (file === undefined || values.waker === undefined || !(Number.isInteger(top) && top > 0)) {
    throw new Error('usage: wake-placement.ts PERF_SCRIPT.txt --waker TID [--wakees TID[,TID...] | --top N]');
  }
  const events = parseSched(readFileSync(file, 'utf8'));
  const wakees = values.wakees?.split(',') ?? mostWoken(events, values.waker, top);
  const groups = wakePlacement(events, values.waker, new Set(wakees));
  const total = groups.reduce((sum, group) => sum + group.count, 0);
  console.log(`${total} wakes of ${wakees.join(',') || '(no thread)'} by ${values.waker}`);
  console.log('| placed on | got the CPU | wakes | share | p50 µs | p90 µs |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: |');
  for (const g of groups) {
    const share = `${(g.share * 100).toFixed(0)} %`;
    console.log(
      `| ${g.placement} | ${g.handover} | ${g.count} | ${share} | ${g.p50Us.toFixed(0)} | ${g.p90Us.toFixed(0)} |`,
    );
  }
}
