/** What a fan-out session reports as it runs: the input of the progress renderers and `--json`. */
import type { EngineDescription } from '../engines/engine.ts';
import type { SerializedError } from '../errors.ts';
import type { ApprovalDecision, ApprovalRequest } from '../protocol/approvals.ts';
import type { ResultLine } from './results.ts';
import type { RunLimits } from './run-plan.ts';
import type { SummaryHead } from './summary.ts';

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
      readonly kind: 'fanout' | 'resume' | 'demo' | 'replay';
      /** A replay (or the resume of one): the recorded run it replays. */
      readonly replayOf?: string;
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
      /** Where the agents run: the threads engine, or the redis engine's queue and its workers. */
      readonly engine: EngineDescription;
      readonly concurrency: number;
      /** The run's budgets (0 = unlimited) and the tokens earlier sessions already used. */
      readonly runLimits: RunLimits;
      readonly usedTokens: number;
      /** Budgets the run cannot enforce (a cost budget for a model without a known price). */
      readonly notices: readonly string[];
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
      /** One model request's usage (per step). */
      readonly type: 'usage';
      readonly inputTokens: number;
      readonly outputTokens: number;
      /** Estimated by troupe: both sides, or only `estimatedSide` (the server reported the other). */
      readonly estimated: boolean;
      /** The one side estimated; absent when both were (or none). */
      readonly estimatedSide?: 'input' | 'output';
      /** USD; null when the model's price is unknown. */
      readonly costUsd: number | null;
      /**
       * Not one request: at the agent's end, what its journal holds that no usage event reported
       * (its thread died before sending it; `AgentUsage.unreported`).
       */
      readonly unreported?: true;
    })
  | {
      /** The run's budget (`runLimits`) is spent: every running agent is being cancelled. */
      readonly type: 'budget';
      readonly code: 'run_token_budget' | 'run_cost_budget';
      readonly message: string;
    }
  | (AgentEventBase & { readonly type: 'text'; readonly text: string })
  | (AgentEventBase & { readonly type: 'waiting' })
  | (AgentEventBase & { readonly type: 'instructed'; readonly text: string })
  | (AgentEventBase & {
      readonly type: 'restarted';
      readonly restart: number;
      readonly cause: SerializedError;
    })
  /** A tool call of the agent waits for a decision. */
  | (AgentEventBase & { readonly type: 'approval'; readonly request: ApprovalRequest })
  /** A decision on one of the agent's calls (asked, or denied without asking: `requestId` null). */
  | (AgentEventBase & {
      readonly type: 'decision';
      readonly requestId: string | null;
      readonly tool: string;
      readonly rule: string;
      readonly decision: ApprovalDecision;
    })
  | { readonly type: 'ended'; readonly line: ResultLine }
  | { readonly type: 'thread'; readonly event: 'started' | 'crashed' | 'respawned'; readonly hostId: number }
  | { readonly type: 'backoff'; readonly provider: string; readonly retryAfterMs: number }
  | { readonly type: 'interrupt'; readonly count: number }
  /** Something the user should act on (e.g. no worker takes the agents' jobs). */
  | { readonly type: 'notice'; readonly text: string }
  /**
   * The run's end: `summary.json` (at `file`) without its per-agent and per-item lists, so the
   * line stays small however many entries the run has.
   */
  | {
      readonly type: 'summary';
      readonly runDir: string;
      readonly file: string;
      readonly summary: SummaryHead;
    };

/** Receives run events. */
export type RunEventSink = (event: RunEvent) => void;
