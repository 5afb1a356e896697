/**
 * CPU time of this process split by thread, from /proc (Linux only): the main thread (the
 * Supervisor, admission, events) against every other thread (the actor hosts, V8's GC and compiler
 * helpers, libuv's pool), each as user and system time. Node 20 has no per-thread CPU clock and
 * names every thread `node`, so the split stops there; a CPU profile divides the hosts further.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU milliseconds, by where they were spent. */
export interface ThreadCpu {
  readonly mainUserMs: number;
  readonly mainSystemMs: number;
  readonly otherUserMs: number;
  readonly otherSystemMs: number;
}

/** `/proc` counts in clock ticks of 10 ms (USER_HZ is 100 on every Linux Node supports). */
const MS_PER_TICK = 10;

/** Now, or undefined where /proc/self/task does not exist. */
export function threadCpu(): ThreadCpu | undefined {
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return undefined;
  }
  const main = String(process.pid);
  const total = { mainUserMs: 0, mainSystemMs: 0, otherUserMs: 0, otherSystemMs: 0 };
  for (const task of tasks) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    } catch {
      continue; // The thread exited since the listing.
    }
    // Fields after the command name, which is in parentheses and may contain spaces: utime, stime
    // are fields 14 and 15 of the line, 12 and 13 after the name.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const user = Number(fields[11]) * MS_PER_TICK;
    const system = Number(fields[12]) * MS_PER_TICK;
    if (task === main) {
      total.mainUserMs += user;
      total.mainSystemMs += system;
    } else {
      total.otherUserMs += user;
      total.otherSystemMs += system;
    }
  }
  return total;
}

/** What was spent between two readings (threads that exited in between are not counted). */
export function cpuSince(before: ThreadCpu, after: ThreadCpu): ThreadCpu {
  return {
    mainUserMs: after.mainUserMs - before.mainUserMs,
    mainSystemMs: after.mainSystemMs - before.mainSystemMs,
    otherUserMs: after.otherUserMs - before.otherUserMs,
    otherSystemMs: after.otherSystemMs - before.otherSystemMs,
  };
}
