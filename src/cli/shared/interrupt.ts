/**
 * Ctrl-C while an agent runs: the first one cancels the agent cooperatively (it ends Failed with
 * reason `cancelled` and its journal gets that terminal event); a second one ends the process at
 * once, for a tool or provider that does not honour the abort signal. The journal is written
 * synchronously, so even then it holds every event so far and `troupe resume` can continue it.
 */

/** The signals treated as Ctrl-C: SIGTERM too, so `kill PID` also ends the agent cleanly. */
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

export type InterruptSignal = (typeof SIGNALS)[number];

/** What {@link watchInterrupts} listens on: `process`, or a stand-in in tests. */
export interface SignalSource {
  on(signal: InterruptSignal, listener: (signal: InterruptSignal) => void): unknown;
  off(signal: InterruptSignal, listener: (signal: InterruptSignal) => void): unknown;
}

/**
 * Calls `first` on the first SIGINT or SIGTERM; on the next one, stops listening and calls
 * `second` with it. The returned function stops listening (safe to call twice).
 */
export function watchInterrupts(
  first: () => void,
  second: (signal: InterruptSignal) => void,
  source: SignalSource = process,
): () => void {
  let seen = 0;
  const stop = (): void => {
    for (const signal of SIGNALS) source.off(signal, listener);
  };
  const listener = (signal: InterruptSignal): void => {
    seen += 1;
    if (seen === 1) {
      first();
      return;
    }
    stop();
    second(signal);
  };
  for (const signal of SIGNALS) source.on(signal, listener);
  return stop;
}

/**
 * Ends this process with `signal`, as if nothing had caught it. `process.exit` is no use here: Node
 * joins its thread pool on exit, so a tool blocked in a file-system call (a read from a FIFO, a
 * hung network mount) would keep the process alive. With no listener left, the signal's default
 * action ends the process at once, and the shell sees it was interrupted.
 */
export function raise(signal: InterruptSignal): void {
  process.kill(process.pid, signal);
}
