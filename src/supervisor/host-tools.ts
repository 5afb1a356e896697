/**
 * Host tools run on the supervisor for an agent on any engine: the user's `hostTools` closures and
 * the orchestration tools. An error becomes a failed tool outcome the model sees.
 */
import { setMaxListeners } from 'node:events';
import { followSignal } from '../abort.ts';
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
  /** 0: no bound. */
  readonly maxSubagents: number;
  readonly spawn: (agent: string, options: SpawnOptions) => AgentHandle;
}

/** Per agent, a signal that aborts when its result settles: one listener on it for all its calls. */
const endedSignals = new WeakMap<KnownRecord, AbortSignal>();

function endedSignal(caller: KnownRecord): AbortSignal {
  let signal = endedSignals.get(caller);
  if (signal === undefined) {
    const controller = new AbortController();
    // Each running host call of the agent follows it (several may run at once).
    setMaxListeners(0, controller.signal);
    void caller.handle.result.then(() => controller.abort(new Error(`Agent ${caller.handle.id} has ended`)));
    signal = controller.signal;
    endedSignals.set(caller, signal);
  }
  return signal;
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
  try {
    const userTool = ctx.hostTools[name];
    if (userTool) {
      // The call's signal aborts when its agent ends (cancelled, timed out, the supervisor closed):
      // a tool that heeds it stops working for an agent that is gone.
      const controller = new AbortController();
      const unfollow = followSignal(endedSignal(caller), controller);
      try {
        const outcome = await userTool.execute({ ...args }, { agentId, signal: controller.signal });
        return typeof outcome === 'string' ? { ok: true, text: outcome } : outcome;
      } finally {
        unfollow();
      }
    }
    if (isEnded(caller)) return { ok: false, text: `${name} failed: agent ${agentId} has ended` };
    return await runOrchestrationTool(name, args, {
      caller,
      agents: ctx.agents,
      maxDepth: ctx.maxDepth,
      maxChildren: ctx.maxChildren,
      maxSubagents: ctx.maxSubagents,
      spawn: (agent, options) => ctx.spawn(agent, { ...options, parent: agentId }),
    });
  } catch (error) {
    return { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
