/**
 * CPU time of this process split by thread, from /proc (Linux only): the main thread (the
 * Supervisor, admission, events), each actor host, and every other thread (V8's GC and compiler
 * helpers, libuv's pool, tsx's module loader thread), each as user and system time.
 *
 * Node 20 has no per-thread CPU clock and names every thread `node`; the benchmarks' tool module
 * (bench/fixtures/noop-tool.ts), which every actor host imports when it starts, renames the thread
 * that imports it to {@link HOST_THREAD_NAME} (`/proc/thread-self/comm`), which is how a host is
 * told from V8's and libuv's threads here.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';

/** The name an actor host's thread is given by {@link nameHostThread} (at most 15 bytes). */
export const HOST_THREAD_NAME = 'troupe-host';

/** User and system CPU milliseconds. */
export interface CpuMs {
  readonly userMs: number;
  readonly systemMs: number;
}

/** CPU milliseconds, by where they were spent. */
export interface ThreadCpu {
  readonly main: CpuMs;
  /** Each actor host's thread, by Linux thread id. */
  readonly hosts: Readonly<Record<string, CpuMs>>;
  /** Every other thread of the process. */
  readonly other: CpuMs;
  /** The same, by Linux thread id. */
  readonly others: Readonly<Record<string, CpuMs>>;
}

/** `/proc` counts in clock ticks of 10 ms (USER_HZ is 100 on every Linux Node supports). */
const MS_PER_TICK = 10;

/**
 * Renames the calling thread to {@link HOST_THREAD_NAME} unless it is the main thread (Linux; a
 * no-op elsewhere). Called by the benchmarks' tool module as an actor host imports it.
 */
export function nameHostThread(): void {
  try {
    // "<pid>/task/<tid>" of the calling thread: sync fs calls run on the thread that makes them.
    const self = readlinkSync('/proc/thread-self');
    if (self.endsWith(`/task/${process.pid}`)) return;
    writeFileSync('/proc/thread-self/comm', HOST_THREAD_NAME);
  } catch {
    // No /proc: the split is not available, nothing else changes.
  }
}

function add(a: CpuMs, b: CpuMs): CpuMs {
  return { userMs: a.userMs + b.userMs, systemMs: a.systemMs + b.systemMs };
}

function minus(a: CpuMs, b: CpuMs): CpuMs {
  return { userMs: a.userMs - b.userMs, systemMs: a.systemMs - b.systemMs };
}

const ZERO: CpuMs = { userMs: 0, systemMs: 0 };

/** Now, or undefined where /proc/self/task does not exist. */
export function threadCpu(): ThreadCpu | undefined {
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return undefined;
  }
  const mainTask = String(process.pid);
  let main = ZERO;
  let other = ZERO;
  const hosts: Record<string, CpuMs> = {};
  const others: Record<string, CpuMs> = {};
  for (const task of tasks) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    } catch {
      continue; // The thread exited since the listing.
    }
    // `pid (comm) state ...`: the name may contain spaces and parentheses, so split around the
    // last `)`. utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = { userMs: Number(fields[11]) * MS_PER_TICK, systemMs: Number(fields[12]) * MS_PER_TICK };
    if (task === mainTask) main = add(main, cpu);
    else if (name === HOST_THREAD_NAME) hosts[task] = cpu;
    else {
      other = add(other, cpu);
      others[task] = cpu;
    }
  }
  return { main, hosts, other, others };
}

/**
 * What was spent between two readings. A host that started in between counts from zero; threads
 * that exited in between are not counted.
 */
export function cpuSince(before: ThreadCpu, after: ThreadCpu): ThreadCpu {
  const since = (a: Readonly<Record<string, CpuMs>>, b: Readonly<Record<string, CpuMs>>) =>
    Object.fromEntries(Object.entries(a).map(([tid, cpu]) => [tid, minus(cpu, b[tid] ?? ZERO)]));
  return {
    main: minus(after.main, before.main),
    hosts: since(after.hosts, before.hosts),
    other: minus(after.other, before.other),
    others: since(after.others, before.others),
  };
}

/** The total of every thread in `cpu`. */
export function totalCpu(cpu: ThreadCpu): CpuMs {
  return Object.values(cpu.hosts).reduce(add, add(cpu.main, cpu.other));
}

/** CPU ms (user + system, every thread) of another process, or undefined (no such pid, no /proc). */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  } catch {
    return undefined;
  }
}
