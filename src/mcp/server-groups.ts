/**
 * POSIX: the process groups of stdio MCP servers that may still have a process, in this thread: the
 * servers it started itself (stdio-transport.ts) and, on the supervisor's thread, those its actor
 * threads report (`mcp_process`). Each server leads a group of its own, which the terminal's Ctrl-C
 * no longer reaches, so the process's own end kills the groups still here: its `exit`, and a signal
 * re-raised to end it at once (`raise` in run-dir/interrupt.ts, a second Ctrl-C). A process killed
 * by SIGKILL runs neither.
 */
const groups = new Set<number>();
let listening = false;

/** Follows group `pgid` until {@link unwatchServerGroup}; killed if the process ends first. */
export function watchServerGroup(pgid: number): void {
  groups.add(pgid);
  if (listening) return;
  listening = true;
  process.on('exit', killServerGroups);
}

export function unwatchServerGroup(pgid: number): void {
  groups.delete(pgid);
}

/** Whether group `pgid` is followed, to be killed if the process ends (for tests). */
export function isWatchedServerGroup(pgid: number): boolean {
  return groups.has(pgid);
}

/** SIGKILL to every group followed, synchronously: the process is about to end. */
export function killServerGroups(): void {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  groups.clear();
}
