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

/**
 * How wide a command's tables may be on stdout: `COLUMNS` when set to a positive whole number, else
 * the terminal's width, else (a CI log, a file, a pipe) no limit, so nothing a log keeps is cut.
 */
export function outputColumns(
  stream: { readonly isTTY?: boolean; readonly columns?: number } = process.stdout,
): number {
  const fromEnv = Number(process.env.COLUMNS);
  if (Number.isSafeInteger(fromEnv) && fromEnv > 0) return fromEnv;
  if (stream.isTTY === true && stream.columns !== undefined && stream.columns > 0) return stream.columns;
  return Number.POSITIVE_INFINITY;
}
