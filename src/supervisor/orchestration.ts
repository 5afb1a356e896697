/**
 * Orchestration tools: an agent spawns subagents, instructs them and awaits their results. They run
 * on the supervisor as host tools. They are opt-in: an agent gets them only when its definition's
 * `tools` list names them, so ordinary agents cannot fan out by accident.
 */
import type { AgentOutcome } from '../loop/types.ts';
import {
  AWAIT_AGENTS,
  type HostToolDeclaration,
  SEND_INSTRUCTION,
  SPAWN_AGENT,
} from '../protocol/messages.ts';
import type { ToolOutcome } from '../tools/types.ts';
import { spawnedOutcome } from './adoption.ts';
import type { AgentHandle } from './agent-handle.ts';
import type { AgentRecord, KnownRecord } from './agent-record.ts';
import type { SpawnOptions } from './spawn-options.ts';

/** Declarations sent to every host. */
export const ORCHESTRATION_TOOLS: readonly HostToolDeclaration[] = [
  {
    name: SPAWN_AGENT,
    description:
      'Start a subagent from an agent definition with a task. Returns its agent id. The subagent runs in parallel; use await_agents to collect its result.',
    parameters: {
      type: 'object',
      properties: {
        agent: {
          type: 'string',
          description: 'Definition name, e.g. "worker" (what Claude Code\'s Task tool calls subagent_type).',
        },
        task: { type: 'string', description: 'The task for the subagent.' },
        context: {
          type: 'array',
          items: { type: 'string' },
          description: 'Context sections for the subagent.',
        },
      },
      required: ['agent', 'task'],
      additionalProperties: false,
    },
    readOnly: false,
  },
  {
    name: SEND_INSTRUCTION,
    description:
      'Send an instruction to one of your subagents. It receives it from wait_for_instruction; queued until then.',
    parameters: {
      type: 'object',
      properties: { agentId: { type: 'string' }, text: { type: 'string' } },
      required: ['agentId', 'text'],
      additionalProperties: false,
    },
    readOnly: false,
  },
  {
    name: AWAIT_AGENTS,
    description:
      'Wait for subagents to finish and return their results. mode "all" (default) waits for every listed agent; "any" returns as soon as one of them has finished. Omit agentIds for all your subagents.',
    parameters: {
      type: 'object',
      properties: {
        agentIds: { type: 'array', items: { type: 'string' } },
        mode: { type: 'string', enum: ['all', 'any'] },
      },
      additionalProperties: false,
    },
    readOnly: true,
  },
];

interface OrchestrationContext {
  readonly caller: AgentRecord;
  /**
   * The call's time limit, the caller's definition's `toolConfig.<tool>.timeoutMs`; 0: none. The
   * thread does not time these tools (src/tools/toolbox.ts): only here is it known what a call
   * abandoned at its limit did, so only here can the model be told.
   */
  readonly timeoutMs: number;
  /** The name the model knows the tool by, for what it is told. */
  readonly modelName: string;
  /** Every agent the supervisor holds: a running caller's children are all there, ended or not. */
  readonly agents: ReadonlyMap<string, KnownRecord>;
  readonly maxDepth: number;
  readonly maxChildren: number;
  /** Subagents in the caller's whole tree (`caller.tree`); 0: no bound. */
  readonly maxSubagents: number;
  readonly spawn: (agent: string, options: Omit<SpawnOptions, 'parent'>) => AgentHandle;
  /** Queues an instruction for an agent; resolves with its index (`Supervisor.instruct`). */
  readonly instruct: (agentId: string, text: string) => Promise<number>;
}

function summarize(id: string, agent: string, outcome: AgentOutcome): Record<string, unknown> {
  return outcome.status === 'completed'
    ? { agentId: id, agent, status: 'completed', result: outcome.result ?? outcome.answer }
    : { agentId: id, agent, status: 'failed', reason: outcome.reason, error: outcome.error.message };
}

/**
 * `{ value }` of `promise`, or undefined when `timeoutMs` (0: none) passes first; the promise is
 * left to settle on its own.
 */
async function withinLimit<T>(promise: Promise<T>, timeoutMs: number): Promise<{ value: T } | undefined> {
  if (timeoutMs === 0) return { value: await promise };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise.then((value) => ({ value })),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs one orchestration tool for `ctx.caller`, within its time limit (`ctx.timeoutMs`), which
 * abandons only what can be left without losing track of it:
 * - `spawn_agent` starts its child before it answers, so no limit abandons it: the model always
 *   gets the id of a child it started (told "abandoned", it could never await or instruct it).
 * - `send_instruction` at its limit answers that the instruction was not withdrawn and may still be
 *   delivered (it waits for a subagent that has not started yet): do not send it again.
 * - `await_agents` at its limit answers which of the agents have finished and which still run;
 *   they go on, and a later `await_agents` waits for them again.
 */
export async function runOrchestrationTool(
  name: string,
  args: Readonly<Record<string, unknown>>,
  ctx: OrchestrationContext,
): Promise<ToolOutcome> {
  const { caller } = ctx;
  switch (name) {
    case SPAWN_AGENT: {
      if (caller.spec.depth + 1 > ctx.maxDepth) {
        return { ok: false, text: `spawn_agent refused: nesting depth limit (${ctx.maxDepth}) reached.` };
      }
      if (caller.children.length >= ctx.maxChildren) {
        return {
          ok: false,
          text: `spawn_agent refused: you already have ${ctx.maxChildren} subagents (the limit).`,
        };
      }
      caller.tree ??= { subagents: 0 };
      if (ctx.maxSubagents > 0 && caller.tree.subagents >= ctx.maxSubagents) {
        return {
          ok: false,
          text: `spawn_agent refused: this agent tree already has ${ctx.maxSubagents} subagents (the limit, orchestration.maxSubagents).`,
        };
      }
      const agent = String(args.agent);
      const context = Array.isArray(args.context) ? args.context.map(String) : undefined;
      const handle = ctx.spawn(agent, {
        task: String(args.task),
        ...(context ? { context } : {}),
        provider: caller.spec.provider,
        // The parent's limits (a plan's `limits`, a spawn's): without them a subagent ran with the
        // defaults, so an orchestrator's children escaped the limits its run set for every agent.
        limits: caller.spec.limits,
      });
      caller.tree.subagents += 1;
      return spawnedOutcome(handle.id, agent);
    }
    case SEND_INSTRUCTION: {
      const agentId = String(args.agentId);
      const child = ctx.agents.get(agentId);
      if (!child || child.spec.parentId !== caller.id) {
        return { ok: false, text: `send_instruction failed: ${agentId} is not one of your subagents.` };
      }
      if (child.state === 'ended')
        return { ok: false, text: `send_instruction failed: ${agentId} has already ended.` };
      // Its index is recorded: a parent resumed in a new supervisor tells by it which of its
      // instructions the child read, whatever else (a program's `handle.send`) was sent between.
      const queued = await withinLimit(ctx.instruct(agentId, String(args.text)), ctx.timeoutMs);
      if (queued === undefined) {
        return {
          ok: false,
          text: `${ctx.modelName} did not finish within ${ctx.timeoutMs} ms (its time limit): the instruction for ${agentId} was not withdrawn and may still be delivered (it is held until the subagent starts). Do not send it again.`,
          data: { agentId, abandoned: true },
        };
      }
      const index = queued.value;
      return { ok: true, text: `Instruction queued for ${agentId}.`, data: { agentId, index } };
    }
    case AWAIT_AGENTS: {
      const ids = Array.isArray(args.agentIds) ? args.agentIds.map(String) : [...caller.children];
      const records: KnownRecord[] = [];
      for (const id of ids) {
        const child = ctx.agents.get(id);
        if (!child || child.spec.parentId !== caller.id) {
          return { ok: false, text: `await_agents failed: ${id} is not one of your subagents.` };
        }
        records.push(child);
      }
      if (records.length === 0) return { ok: false, text: 'await_agents failed: you have no subagents.' };
      const pending = records.map((r) =>
        r.handle.result.then((outcome) => summarize(r.id, r.handle.agent, outcome)),
      );
      const waited = await withinLimit(
        args.mode === 'any' ? Promise.race(pending).then((result) => [result]) : Promise.all(pending),
        ctx.timeoutMs,
      );
      if (waited === undefined) {
        const finished = records.filter((r) => r.state === 'ended').map((r) => r.id);
        const running = records.filter((r) => r.state !== 'ended').map((r) => r.id);
        return {
          ok: false,
          text: `${ctx.modelName} did not finish within ${ctx.timeoutMs} ms (its time limit). Still running (they go on; call ${ctx.modelName} again to wait for them): ${running.join(', ') || 'none'}. Finished: ${finished.join(', ') || 'none'}.`,
          data: { running, finished, abandoned: true },
        };
      }
      const results = waited.value;
      return { ok: true, text: JSON.stringify(results, null, 2), data: results };
    }
    default:
      return { ok: false, text: `Unknown host tool ${name}.` };
  }
}
