/** What a fan-out session reports as it runs: the input of the progress renderers and `--json`. */
import type { SerializedError } from '../errors.ts';
import type { ResultLine } from './results.ts';
import type { RunSummary } from './summary.ts';

/** Identifies an agent in a run event. */
interface AgentEventBase {
  readonly agentId: string;
  /** Plan position; null for agents spawned by other agents. */
  readonly index: number | null;
  readonly agent: string;
}

/** Events of a fan-out session, in the order they happen. */
export type RunEvent =
  | {
      readonly type: 'run';
      readonly runId: string;
      readonly runDir: string;
      readonly kind: 'fanout' | 'resume' | 'demo';
      readonly provider: string;
      readonly model: string | null;
      readonly simulated: boolean;
      /** Set when the simulated model answers: what every output says about it. */
      readonly notice?: string;
      /** Plan entries in the run. */
      readonly planned: number;
      /** Plan entries this session runs (the rest were finished earlier). */
      readonly toRun: number;
      readonly threads: number;
      readonly concurrency: number;
      /** Where the agents run: this process's threads, or `troupe worker` processes through Redis. */
      readonly backend: 'threads' | 'redis';
    }
  | (AgentEventBase & { readonly type: 'spawned'; readonly parentId: string | null; readonly task: string })
  | (AgentEventBase & { readonly type: 'started'; readonly hostId: number; readonly resumed: boolean })
  | (AgentEventBase & { readonly type: 'round'; readonly round: number; readonly estimatedTokens: number })
  | (AgentEventBase & {
      readonly type: 'tool';
      readonly round: number;
      readonly tool: string;
      /** undefined when the call starts. */
      readonly ok: boolean | undefined;
    })
  | (AgentEventBase & {
      readonly type: 'usage';
      readonly inputTokens: number;
      readonly outputTokens: number;
      readonly costUsd: number;
    })
  | (AgentEventBase & { readonly type: 'text'; readonly text: string })
  | (AgentEventBase & { readonly type: 'waiting' })
  | (AgentEventBase & { readonly type: 'instructed'; readonly text: string })
  | (AgentEventBase & {
      readonly type: 'restarted';
      readonly restart: number;
      readonly cause: SerializedError;
    })
  | { readonly type: 'ended'; readonly line: ResultLine }
  | { readonly type: 'thread'; readonly event: 'started' | 'crashed' | 'respawned'; readonly hostId: number }
  | { readonly type: 'backoff'; readonly provider: string; readonly retryAfterMs: number }
  | { readonly type: 'interrupt'; readonly count: number }
  | { readonly type: 'summary'; readonly runDir: string; readonly summary: RunSummary };

/** Receives run events. */
export type RunEventSink = (event: RunEvent) => void;
