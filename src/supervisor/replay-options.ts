/** Options of `Supervisor.replay`. */
import type { AgentDefinition } from '../definition/types.ts';
import type { AgentLimits } from '../loop/types.ts';
import type { RecordedJournal } from './replay.ts';

export interface ReplayOptions {
  /** The version to replay on: a definition name or object. @default the recorded definition's name, resolved now */
  readonly agent?: string | AgentDefinition;
  /** @default the recorded model */
  readonly model?: string;
  /** Provider name. @default the recorded provider when this supervisor has one of that name, else its default */
  readonly provider?: string;
  /** @default the recorded limits */
  readonly limits?: AgentLimits;
  /** @default the recorded metadata */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Agent id of the replay. @default a random UUID */
  readonly id?: string;
  readonly signal?: AbortSignal;
  /** Continue the replay from its own journal (same `id`), e.g. after the process died. @default false */
  readonly resume?: boolean;
  /** The replay reference recorded in its Started event and usage records. @default the journal's absolute path, else `'events'` */
  readonly of?: string;
  /** Journals of the recorded agent's subagents, by recorded agent id. @default the files beside a journal path */
  readonly journals?: (agentId: string) => RecordedJournal | undefined;
}
