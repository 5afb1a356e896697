/** What a spawn says about the agent to run. */
import type { AgentLimits } from '../loop/types.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { AgentPermissions } from '../tools/permissions.ts';
import type { ReplaySource } from './replay.ts';

/** Options of one spawn. */
export interface SpawnOptions {
  readonly task: string;
  /** Context sections placed before the task, in order. */
  readonly context?: readonly string[];
  /** Id of the agent that spawned this one (set by orchestration tools). */
  readonly parent?: string;
  /** Caller data carried into events, journals and results. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Aborting it cancels the agent. */
  readonly signal?: AbortSignal;
  /** Provider name. @default the supervisor's defaultProvider */
  readonly provider?: string;
  /** Model. @default the definition's model, else the supervisor's defaultModel */
  readonly model?: string;
  readonly limits?: AgentLimits;
  /**
   * Model settings of this agent: over its definition's (and the supervisor's), key by key. A
   * resumed agent sends what its journal recorded instead. @default {}
   */
  readonly modelSettings?: ModelSettings;
  /** Agent id. @default a random UUID */
  readonly id?: string;
  /**
   * Continue the agent from its journal when that journal has events, e.g. to finish the agents of
   * an interrupted run; finished tool calls are not run again. (The redis engine always continues
   * an agent whose journal stream has events.) An unfinished agent's children are adopted from
   * their journals (docs/host-channels.md): finished ones keep their outcomes, unfinished ones are
   * resumed, and an unfinished descendant under a finished child (or under the agent itself, when
   * its journal had ended, or one whose journal names it as parent but that it does not adopt: on
   * the threads engine), which nothing would await, has its journal ended `Failed(cancelled)`
   * (`error.fields.parentId`) and is reported by `agent:spawned` and `agent:failed`, as
   * `troupe resume` ends one.
   * @default false
   */
  readonly resume?: boolean;
  /**
   * Id of an agent that failed (or ended) whose journal this one continues: its events up to its
   * end are copied under this agent's id, and this agent resumes from them, so the tool calls it
   * finished are not run again, and the children its journal shows are adopted as `resume` adopts
   * them (the fork's, and a retry's own when a retry cut off earlier is resumed). The other agent's
   * journal is left as it was. Used to retry failed agents (`troupe resume --retry-failed`).
   */
  readonly retryOf?: string;
  /**
   * Run the agent as a replay of a recorded one: its tool calls are answered from that recording
   * (src/replay/replay-calls.ts), and the recorded instructions are sent again. A replayed
   * orchestrator's subagents are replayed from their own recordings without being asked.
   * `Supervisor.replay` fills this and the task from a journal.
   */
  readonly replay?: ReplaySource;
  /**
   * Rules added to the supervisor's for this agent, and a mode for its definition if that says
   * `default` (timeouts and `allowBypass` stay the supervisor's). @default none
   */
  readonly permissions?: Pick<AgentPermissions, 'mode' | 'allow' | 'ask' | 'deny'>;
}
