/**
 * Host tools run on the supervisor for an agent on any engine: the user's `hostTools` closures and
 * the orchestration tools. An error becomes a failed tool outcome the model sees.
 */
import type { ToolOutcome } from '../tools/types.ts';
import type { AgentHandle } from './agent-handle.ts';
import { isEnded, type KnownRecord } from './agent-record.ts';
import type { HostTool } from './options.ts';
import { runOrchestrationTool } from './orchestration.ts';
import type { SpawnOptions } from './spawn-options.ts';

/** What a host tool call needs from the supervisor. */
export interface HostToolContext {
  readonly hostTools: Readonly<Record<string, HostTool>>;
  readonly agents: ReadonlyMap<string, KnownRecord>;
  readonly maxDepth: number;
  readonly maxChildren: number;
  readonly spawn: (agent: string, options: SpawnOptions) => AgentHandle;
}

/** Runs host tool `name` for `agentId`. */
export async function runHostTool(
  ctx: HostToolContext,
  agentId: string,
  name: string,
  args: Readonly<Record<string, unknown>>,
): Promise<ToolOutcome> {
  const caller = ctx.agents.get(agentId);
  if (!caller) return { ok: false, text: `${name} failed: agent ${agentId} is not one of this supervisor's` };
  const controller = new AbortController();
  try {
    const userTool = ctx.hostTools[name];
    if (userTool) {
      const outcome = await userTool.execute({ ...args }, { agentId, signal: controller.signal });
      return typeof outcome === 'string' ? { ok: true, text: outcome } : outcome;
    }
    if (isEnded(caller)) return { ok: false, text: `${name} failed: agent ${agentId} has ended` };
    return await runOrchestrationTool(name, args, {
      caller,
      agents: ctx.agents,
      maxDepth: ctx.maxDepth,
      maxChildren: ctx.maxChildren,
      spawn: (agent, options) => ctx.spawn(agent, { ...options, parent: agentId }),
    });
  } catch (error) {
    return { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
