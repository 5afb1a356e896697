/** Where a command writes: the process's streams, or a capture in tests. */

/** Output sinks, replaceable in tests. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /**
   * Aborted when whoever read stdout has gone (EPIPE, e.g. `troupe fanout ... --json | head`): a
   * command stops its work as after a first Ctrl-C, writes its files and the process exits 0.
   */
  readonly stdoutClosed?: AbortSignal;
}
