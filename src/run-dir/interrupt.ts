/**
 * Ctrl-C while an agent runs: the first one cancels the agent cooperatively (it ends Failed with
 * reason `cancelled` and its journal gets that terminal event); a second one ends the process at
 * once, for a tool or provider that does not honour the abort signal. The journal is written
 * synchronously, so even then it holds every event so far and `troupe resume` can continue it.
 */
import { killServerGroups } from '../mcp/server-groups.ts';
import { EXIT_INTERRUPTED } from './constants.ts';

/**
 * The signals treated as Ctrl-C: SIGTERM too, so `kill PID` (`timeout`, `docker stop`) also ends the
 * agents cleanly, and SIGHUP (a closed terminal).
 */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export type InterruptSignal = (typeof SIGNALS)[number];

/**
 * The exit code of a command its user interrupted with `signal` (128 + the signal's number, as a
 * shell reports a process the signal ended): 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP.
 */
export const INTERRUPT_EXIT_CODES: Readonly<Record<InterruptSignal, number>> = {
  SIGINT: EXIT_INTERRUPTED,
  SIGTERM: 143,
  SIGHUP: 129,
};

/** What {@link watchInterrupts} listens on: `process`, or a stand-in in tests. */
export interface SignalSource {
  on(signal: InterruptSignal, listener: (signal: InterruptSignal) => void): unknown;
  off(signal: InterruptSignal, listener: (signal: InterruptSignal) => void): unknown;
}

/**
 * Calls `first` on the first SIGINT, SIGTERM or SIGHUP; on the next one, stops listening and calls
 * `second` with it. The returned function stops listening (safe to call twice).
 *
 * On `process` a listener of troupe's stays installed after the watch stops (see
 * {@link keepListening}): a Ctrl-C that arrives just as a run ends must still end the process.
 */
export function watchInterrupts(
  first: (signal: InterruptSignal) => void,
  second: (signal: InterruptSignal) => void,
  source: SignalSource = process,
): () => void {
  if (source === process) keepListening();
  let seen = 0;
  const onSignal = (signal: InterruptSignal): void => {
    seen += 1;
    if (seen === 1) {
      first(signal);
      return;
    }
    stop();
    second(signal);
  };
  // One listener per signal, so each knows its signal whatever the source passes it.
  const listeners = SIGNALS.map((signal) => [signal, () => onSignal(signal)] as const);
  const stop = (): void => {
    for (const [signal, listener] of listeners) source.off(signal, listener);
  };
  for (const [signal, listener] of listeners) source.on(signal, listener);
  return stop;
}

/**
 * Ends this process with `signal`, as if nothing had caught it. `process.exit` is no use here: Node
 * joins its thread pool on exit, so a tool blocked in a file-system call (a read from a FIFO, a
 * hung network mount) would keep the process alive. With no listener left, the signal's default
 * action ends the process at once, and the shell sees it was interrupted. The stdio MCP servers
 * still running are killed first: each leads a process group of its own, which the terminal's
 * Ctrl-C does not reach, and an ending by signal runs no `exit` listener.
 */
export function raise(signal: InterruptSignal): void {
  killServerGroups();
  if (lingering) {
    for (const name of SIGNALS) process.off(name, linger);
    lingering = false;
  }
  process.kill(process.pid, signal);
}

let lingering = false;

/**
 * Keeps one listener of each of these signals on the process for good, installed before the first
 * watch. Removing a signal's last listener closes Node's signal handle, and libuv then drops a
 * signal it has caught but not yet handed to JavaScript: a second Ctrl-C sent as the agent ended
 * was lost, and the process lived on behind a tool blocked in the thread pool. With this listener
 * the handle stays open; alone, it does what the default action would (re-raise the signal with
 * no listener left), and it leaves the signal to any other listener (a running watch, or the
 * embedding program's own).
 */
function keepListening(): void {
  if (lingering) return;
  lingering = true;
  for (const name of SIGNALS) process.on(name, linger);
}

function linger(signal: InterruptSignal): void {
  if (process.listenerCount(signal) > 1) return;
  raise(signal);
}
