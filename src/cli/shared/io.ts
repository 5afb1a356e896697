/** Where a command writes: the process's streams, or a capture in tests. */

/** Output sinks, replaceable in tests. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}
