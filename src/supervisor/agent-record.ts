/** The supervisor's state of one agent, whichever engine runs it. */
import { abortReason } from '../abort.ts';
import type { AgentOutcome } from '../loop/types.ts';
import { ZERO_USAGE } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import { AgentHandle } from './agent-handle.ts';
import type { ApproveOptions, DenyOptions } from './approvals.ts';
import type { RecordSpec } from './record-spec.ts';
import type { ReplaySource, ReplayState } from './replay.ts';
import type { UsageNode } from './usage-tree.ts';

/** An instruction sent before the engine had the agent, delivered once it has. */
export interface HeldInstruction {
  readonly text: string;
  /** Its index when it must have one (an idempotent re-delivery); else the next. */
  readonly index?: number;
  readonly resolve: (index: number) => void;
  readonly reject: (error: unknown) => void;
}

export interface AgentRecord extends UsageNode {
  readonly id: string;
  readonly spec: RecordSpec;
  readonly handle: AgentHandle;
  readonly settle: (outcome: AgentOutcome) => void;
  readonly children: string[];
  /**
   * pending: spawned, waiting for the supervisor to start and resolve it; running: its engine
   * holds it (queued, running, restarting or parked there); ended: settled.
   */
  state: 'pending' | 'running' | 'ended';
  /** The accepted `complete_task` result, once there is one. */
  completion: { value: unknown } | undefined;
  cancelReason: string | undefined;
  cancelTimer: NodeJS.Timeout | undefined;
  treeUsage: Usage;
  treeCostUsd: number;
  /** Instructions sent while pending, in order. */
  readonly held: HeldInstruction[];
  /** The agent whose journal this one continues (SpawnOptions.retryOf). */
  readonly retryOf: string | undefined;
  /** Where its recording comes from, when it replays one (loaded before it runs). */
  readonly replaySource: ReplaySource | undefined;
  /** Its loaded recording: what its subagents replay. */
  replay: ReplayState | undefined;
  readonly removeAbortListener: () => void;
}

/** What a new record is made of. */
export interface NewRecord {
  readonly spec: RecordSpec;
  readonly retryOf: string | undefined;
  readonly replaySource?: ReplaySource | undefined;
  readonly agent: string;
  readonly signal: AbortSignal | undefined;
  readonly send: (text: string) => void;
  readonly cancel: (reason: string) => void;
  /** A listener was added to the handle. */
  readonly listen: (event: string | symbol) => void;
  readonly approve: (requestId: string, options?: ApproveOptions) => Promise<void>;
  readonly deny: (requestId: string, reason?: string, options?: DenyOptions) => Promise<void>;
}

/** A pending record with its handle; `cancel` runs when `signal` aborts. */
export function createRecord({
  spec,
  retryOf,
  replaySource,
  agent,
  signal,
  send,
  cancel,
  listen,
  approve,
  deny,
}: NewRecord): AgentRecord {
  let settle: (outcome: AgentOutcome) => void = () => {};
  const result = new Promise<AgentOutcome>((resolve) => {
    settle = resolve;
  });
  const handle = new AgentHandle(spec.agentId, agent, spec.parentId, result, {
    send,
    cancel,
    listen,
    approve,
    deny,
  });
  const onAbort = (): void => cancel(abortReason(signal));
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    id: spec.agentId,
    spec,
    handle,
    settle,
    children: [],
    state: 'pending',
    completion: undefined,
    cancelReason: undefined,
    cancelTimer: undefined,
    treeUsage: ZERO_USAGE,
    treeCostUsd: 0,
    held: [],
    retryOf,
    replaySource,
    replay: undefined,
    removeAbortListener: () => signal?.removeEventListener('abort', onAbort),
  };
}

/** Read through a call: TypeScript keeps an earlier narrowing of `state` across calls that change it. */
export function hasEnded(record: AgentRecord): boolean {
  return record.state === 'ended';
}
