/**
 * Host tools run on the supervisor for an agent on any engine: the user's `hostTools` closures and
 * the orchestration tools. An error becomes a failed tool outcome the model sees.
 *
 * A call cut off by its agent's restart runs once: its outcome (its promise while it runs) is kept by
 * agent and call id, so an agent restarted after its thread or worker died, resuming a call that was cut off,
 * gets that call's outcome (waiting for it if it still runs) instead of starting it again: a second
 * child of `spawn_agent`, a second `send_instruction`, a user tool running twice side by side.
 */
import { setMaxListeners } from 'node:events';
import { followSignal } from '../abort.ts';
import { DEFAULT_TOOL_TIMEOUT_MS, MAX_KEPT_HOST_CALLS } from '../constants.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import { timedOutOutcome, timeoutReason } from '../tools/toolbox.ts';
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
  /** Queues an instruction for an agent; resolves with its index (`Supervisor.instruct`). */
  readonly instruct: (agentId: string, text: string) => Promise<number>;
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

/** Per agent, its host calls by call id, oldest first; dropped when the agent ends. */
const keptCalls = new WeakMap<KnownRecord, Map<string, Promise<ToolOutcome>>>();

function keptFor(caller: KnownRecord): Map<string, Promise<ToolOutcome>> {
  let kept = keptCalls.get(caller);
  if (kept === undefined) {
    const calls = new Map<string, Promise<ToolOutcome>>();
    kept = calls;
    keptCalls.set(caller, calls);
    void caller.handle.result.then(() => {
      if (keptCalls.get(caller) === calls) keptCalls.delete(caller);
    });
  }
  return kept;
}

/**
 * Keeps `outcome` as the outcome of `caller`'s call `callId`, as if the call had run here: what a
 * parent resumed in a new supervisor gets for a call its journal shows cut off (see adoption.ts).
 */
export function keepOutcome(caller: KnownRecord, callId: string, outcome: Promise<ToolOutcome>): void {
  const kept = keptFor(caller);
  kept.delete(callId);
  kept.set(callId, outcome);
  if (kept.size > MAX_KEPT_HOST_CALLS) {
    const oldest = kept.keys().next();
    if (!oldest.done) kept.delete(oldest.value);
  }
}

/** Which call of the model a host call is, and whether it only asks for a kept outcome. */
export interface HostCallIdentity {
  /** The model's id of the call. */
  readonly callId?: string;
  /**
   * A restarted agent resuming a call that was cut off: answer the call's kept outcome (waiting
   * for it if it still runs), or `INTERRUPTED_TOOL_RESULT` when there is none. Never runs the tool.
   */
  readonly resume?: boolean;
}

/**
 * Runs host tool `name` for `agentId`, keeping its outcome by `callId` (the latest call of each id,
 * up to {@link MAX_KEPT_HOST_CALLS} per agent while it runs) for a restarted agent that resumes the
 * call (`resume`), which gets that outcome instead of running the tool again.
 */
export function runHostTool(
  ctx: HostToolContext,
  agentId: string,
  name: string,
  args: Readonly<Record<string, unknown>>,
  identity: HostCallIdentity = {},
): Promise<ToolOutcome> {
  const caller = ctx.agents.get(agentId);
  if (!caller)
    return Promise.resolve({
      ok: false,
      text: `${name} failed: agent ${agentId} is not one of this supervisor's`,
    });
  const { callId } = identity;
  if (callId === undefined) {
    return identity.resume === true
      ? Promise.resolve({ ok: false, text: INTERRUPTED_TOOL_RESULT })
      : execute(ctx, caller, agentId, name, args);
  }
  const kept = keptFor(caller);
  if (identity.resume === true)
    return kept.get(callId) ?? Promise.resolve({ ok: false, text: INTERRUPTED_TOOL_RESULT });
  // A call that is not a resume always runs: servers that send no ids get `call_0` every turn
  // (see openai-chat-stream.ts), so an id seen before is a new call. The latest call of an id is
  // the one a restarted agent can be resuming (it resumes only the calls of its last round).
  const outcome = execute(ctx, caller, agentId, name, args);
  keepOutcome(caller, callId, outcome);
  return outcome;
}

/**
 * The time limit of a call of host tool `name` by `caller`: its definition's
 * `toolConfig.<name>.timeoutMs` over the tool's own `timeoutMs`, as for a thread tool
 * (src/tools/toolbox.ts). The thread's stand-in for the tool is timed by the same definition limit,
 * so whichever side answers first, the call fails the same way, and the closure's signal aborts.
 */
function hostToolTimeout(caller: KnownRecord, name: string, tool: HostTool): number {
  return definitionTimeout(caller, name) ?? tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
}

/** `caller`'s definition's `toolConfig.<name>.timeoutMs`, if it sets one. */
function definitionTimeout(caller: KnownRecord, name: string): number | undefined {
  const toolConfig = definitionOf(caller)?.toolConfig;
  const config = toolConfig !== undefined && Object.hasOwn(toolConfig, name) ? toolConfig[name] : undefined;
  return config?.timeoutMs;
}

/** The definition of a caller that has not ended (an ended one keeps none). */
function definitionOf(caller: KnownRecord): AgentDefinition | undefined {
  return isEnded(caller) ? undefined : caller.spec.definition;
}

/** The name the model knows host tool `name` by (the definition's `toolNameOverrides`). */
function modelNameOf(caller: KnownRecord, name: string): string {
  const overrides = definitionOf(caller)?.toolNameOverrides;
  return (overrides !== undefined && Object.hasOwn(overrides, name) ? overrides[name] : undefined) ?? name;
}

async function execute(
  ctx: HostToolContext,
  caller: KnownRecord,
  agentId: string,
  name: string,
  args: Readonly<Record<string, unknown>>,
): Promise<ToolOutcome> {
  try {
    const userTool = ctx.hostTools[name];
    if (userTool) {
      // The call's signal aborts when its agent ends (cancelled, timed out, the supervisor closed):
      // a tool that heeds it stops working for an agent that is gone.
      const controller = new AbortController();
      const unfollow = followSignal(endedSignal(caller), controller);
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        const timeoutMs = hostToolTimeout(caller, name, userTool);
        const modelName = modelNameOf(caller, name);
        const answer = Promise.resolve(userTool.execute({ ...args }, { agentId, signal: controller.signal }));
        const outcome =
          timeoutMs === 0
            ? await answer
            : await Promise.race([
                answer,
                new Promise<ToolOutcome>((resolve) => {
                  // The same answer as a thread tool's time limit (src/tools/toolbox.ts); settled
                  // before the abort so a tool that rejects on it does not win the race.
                  timer = setTimeout(() => {
                    resolve(timedOutOutcome(modelName, timeoutMs));
                    controller.abort(timeoutReason(modelName, timeoutMs));
                  }, timeoutMs);
                }),
              ]);
        return typeof outcome === 'string' ? { ok: true, text: outcome } : outcome;
      } finally {
        clearTimeout(timer);
        unfollow();
      }
    }
    if (isEnded(caller)) return { ok: false, text: `${name} failed: agent ${agentId} has ended` };
    return await runOrchestrationTool(name, args, {
      caller,
      // Only a definition's limit: an orchestration tool has none of its own (await_agents waits).
      timeoutMs: definitionTimeout(caller, name) ?? 0,
      modelName: modelNameOf(caller, name),
      agents: ctx.agents,
      maxDepth: ctx.maxDepth,
      maxChildren: ctx.maxChildren,
      maxSubagents: ctx.maxSubagents,
      spawn: (agent, options) => ctx.spawn(agent, { ...options, parent: agentId }),
      instruct: ctx.instruct,
    });
  } catch (error) {
    return { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
