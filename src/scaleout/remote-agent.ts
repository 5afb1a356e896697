/**
 * The supervisor-side record of an agent of the redis backend, and the host tools it may call:
 * user host tools and the orchestration tools, run on the supervisor for agents on any worker.
 */
import type { SerializedError } from '../errors.ts';
import { SystemError } from '../errors.ts';
import type { AgentOutcome } from '../loop/types.ts';
import type { Usage } from '../providers/types.ts';
import type { AgentHandle } from '../supervisor/agent-handle.ts';
import type { PreparedSupervisorOptions } from '../supervisor/options.ts';
import { runOrchestrationTool } from '../supervisor/orchestration.ts';
import type { RecordSpec } from '../supervisor/record-spec.ts';
import type { AgentRecord, SpawnOptions } from '../supervisor/supervisor.ts';
import type { ToolOutcome } from '../tools/types.ts';
import type { HostCall } from './host-calls.ts';

export const ZERO_USAGE: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
};

/** Supervisor-side state of one agent. */
export interface RemoteAgent {
  readonly id: string;
  readonly spec: RecordSpec;
  readonly handle: AgentHandle;
  readonly settle: (outcome: AgentOutcome) => void;
  readonly children: string[];
  /** queued: not yet a job; running: a job exists; ended: settled. */
  state: 'queued' | 'running' | 'ended';
  cancelReason: string | undefined;
  cancelTimer: NodeJS.Timeout | undefined;
  treeUsage: Usage;
  treeCostUsd: number;
  /** Instructions go out one after another, in the order they were sent. */
  sends: Promise<unknown>;
  collecting: boolean;
  /** When a worker last said something about the agent (or its job was added). */
  heardAt: number;
  readonly removeAbortListener: () => void;
}

/** What a host tool call needs from the supervisor. */
export interface HostToolContext {
  readonly options: Pick<PreparedSupervisorOptions, 'hostTools' | 'maxDepth' | 'maxChildren'>;
  readonly agents: ReadonlyMap<string, RemoteAgent>;
  readonly spawn: (agent: string, options: SpawnOptions) => AgentHandle;
}

/** Runs the host tool a worker asked for on behalf of one of this supervisor's agents. */
export async function runHostTool(ctx: HostToolContext, call: HostCall): Promise<ToolOutcome> {
  const { agentId, name, args } = call;
  const record = ctx.agents.get(agentId);
  if (!record) return { ok: false, text: `${name} failed: agent ${agentId} is not one of this supervisor's` };
  const controller = new AbortController();
  try {
    const userTool = ctx.options.hostTools[name];
    if (userTool) {
      const outcome = await userTool.execute({ ...args }, { agentId, signal: controller.signal });
      return typeof outcome === 'string' ? { ok: true, text: outcome } : outcome;
    }
    return await runOrchestrationTool(name, args, {
      // The orchestration tools read only id, spec (depth, parentId, provider), children, state
      // and handle, which a remote agent has with the same meaning.
      caller: record as unknown as AgentRecord,
      agents: ctx.agents as unknown as ReadonlyMap<string, AgentRecord>,
      maxDepth: ctx.options.maxDepth,
      maxChildren: ctx.options.maxChildren,
      spawn: (agent, options) => ctx.spawn(agent, { ...options, parent: agentId }),
    });
  } catch (error) {
    return { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** Read through a call: TypeScript keeps an earlier narrowing of `state` across awaits. */
export function hasEnded(record: RemoteAgent): boolean {
  return record.state === 'ended';
}

export function isOutcome(value: unknown, agentId: string): value is AgentOutcome {
  if (typeof value !== 'object' || value === null) return false;
  const outcome = value as Partial<AgentOutcome>;
  return (outcome.status === 'completed' || outcome.status === 'failed') && outcome.agentId === agentId;
}

export function cancelledError(reason: string): SerializedError {
  return new SystemError('cancelled', `Cancelled: ${reason}`, { reason }).toJSON();
}

export function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'aborted' : String(reason);
}
