/**
 * What a replay is made of: the reference to the recorded run, and the recorded tool calls a
 * replayed agent's calls are answered from. Plain data: a recording crosses threads inside the
 * actor spec and travels as JSON in a redis job.
 */
import type { StateUpdate } from '../tools/types.ts';

/**
 * What a replayed agent replays: recorded in its Started event and carried by each of its usage
 * records (the replay tag).
 */
export interface ReplayRef {
  /** The recorded run: a run directory, a journal file, or a caller's label. */
  readonly of: string;
  /**
   * The recorded agent this one re-runs. Absent for an agent the recording does not have (a
   * subagent a replayed orchestrator spawned with a task it never spawned before).
   */
  readonly agentId?: string;
}

/** A recorded tool result: the parts of a ToolResult event a replayed call is answered with. */
export interface RecordedResult {
  readonly ok: boolean;
  readonly text: string;
  readonly stateUpdates: readonly StateUpdate[];
  readonly displayedStateKeys: readonly string[];
  readonly data?: unknown;
}

/**
 * One recorded call: canonical tool name, its arguments (canonical parameter names, values as
 * journalled) and its result.
 */
export interface RecordedCall {
  readonly callId: string;
  readonly name: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly result: RecordedResult;
}

/** Everything a replayed agent needs of its recording. */
export interface ReplayRecording {
  readonly ref: ReplayRef;
  /** The recorded calls a replay may answer from, in the order they were made. */
  readonly calls: readonly RecordedCall[];
}

/**
 * How a replayed agent's tool call was answered, recorded on its ToolResult (`replay`):
 * - `recorded`: matched to a recorded call, answered with its recorded result; nothing ran;
 * - `live`: no recorded call matched and the tool is read-only, so it ran;
 * - `refused`: no recorded call matched and the tool is not read-only, so it did not run.
 */
export type ReplayDisposition = 'recorded' | 'live' | 'refused';

/** A replayed agent's calls by how they were answered. */
export interface ReplayCounts {
  readonly recorded: number;
  readonly live: number;
  readonly refused: number;
}
