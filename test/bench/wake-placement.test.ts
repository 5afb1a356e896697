/** The wake placement summary: each wake of a wakee by the waker, grouped by where and how it ran. */
import { describe, expect, it } from 'vitest';
import { mostWoken, parseSched, wakePlacement } from '../../bench/support/wake-placement.ts';

/** `perf script -F tid,cpu,time,event,trace` lines, as perf prints them. */
const waking = (tid: number, cpu: number, time: string, woken: number, target: number): string =>
  `   ${tid} [${String(cpu).padStart(3, '0')}] ${time}:       sched:sched_waking: comm=node pid=${woken} prio=120 target_cpu=${String(target).padStart(3, '0')}`;
const switched = (cpu: number, time: string, prev: number, state: string, next: number): string =>
  `   ${prev} [${String(cpu).padStart(3, '0')}] ${time}:        sched:sched_switch: prev_comm=node prev_pid=${prev} prev_prio=120 prev_state=${state} ==> next_comm=node next_pid=${next} next_prio=120`;

const MAIN = 100;
const HOST = 200;

const trace = [
  // CPU 1 goes idle; the main thread runs on CPU 0.
  switched(1, '0.500000', HOST, 'S', 0),
  switched(0, '0.500001', 0, 'R', MAIN),
  // Woken onto the main thread's CPU, preempts it 5 µs later.
  waking(MAIN, 0, '1.000000', HOST, 0),
  switched(0, '1.000005', MAIN, 'R+', HOST),
  switched(0, '1.000300', HOST, 'S', MAIN),
  // Woken onto idle CPU 1, runs 30 µs later.
  waking(MAIN, 0, '2.000000', HOST, 1),
  switched(1, '2.000030', 0, 'R', HOST),
  switched(1, '2.000300', HOST, 'S', 0),
  // Woken onto the main thread's CPU, runs once the main thread blocks 20 µs later.
  waking(MAIN, 0, '3.000000', HOST, 0),
  switched(0, '3.000020', MAIN, 'S', HOST),
  switched(0, '3.000300', HOST, 'S', MAIN),
  // Not counted: woken by another thread, and a thread that is not a wakee.
  waking(300, 1, '4.000000', HOST, 1),
  switched(1, '4.000010', 0, 'R', HOST),
  waking(MAIN, 0, '5.000000', 400, 1),
  // Not counted: queued on a CPU the trace had not switched yet.
  waking(MAIN, 0, '6.000000', HOST, 2),
  switched(2, '6.000010', 0, 'R', HOST),
  'perf 1 [000] 5.5: sched:sched_stat_runtime: comm=perf pid=1 runtime=1 [ns]',
].join('\n');
const events = parseSched(trace);

describe('wakePlacement', () => {
  it('groups each wake by where it was queued and what ran before it, with its delay', () => {
    const groups = wakePlacement(events, String(MAIN), new Set([String(HOST)]));
    const byKind = Object.fromEntries(
      groups.map((g) => [`${g.placement} / ${g.handover}`, { count: g.count, us: Math.round(g.p50Us) }]),
    );
    expect(byKind).toEqual({
      'waker cpu / preempted the waker': { count: 1, us: 5 },
      'other cpu, idle / from idle': { count: 1, us: 30 },
      'waker cpu / after the waker blocked': { count: 1, us: 20 },
    });
    expect(groups.reduce((sum, g) => sum + g.share, 0)).toBeCloseTo(1);
  });

  it('counts nothing when the waker never wakes a wakee', () => {
    expect(wakePlacement(events, '999', new Set([String(HOST)]))).toEqual([]);
  });

  it('finds the threads the waker woke most often', () => {
    // The main thread woke the host four times and thread 400 once; thread 300 woke the host.
    expect(mostWoken(events, String(MAIN), 2)).toEqual([String(HOST), '400']);
    expect(mostWoken(events, String(MAIN), 1)).toEqual([String(HOST)]);
    expect(mostWoken(events, '300', 2)).toEqual([String(HOST)]);
  });
});
