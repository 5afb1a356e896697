/**
 * `complete_task` and `wait_for_instruction`: declared here (name, schema, description) so the
 * policy, the prompt and the provider see them like any tool; their behaviour belongs to the loop
 * and the supervisor, which pass it in as `execute` when they build an agent's registry.
 */
import { markBuiltinTools } from '../registry.ts';
import type { JsonSchema, Tool, ToolContext, ToolOutcome } from '../types.ts';

/** Canonical name of the tool an agent calls to finish with a result (checked against its `outputSchema`). */
export const COMPLETE_TASK = 'complete_task';
/** Canonical name of the tool an agent calls to wait for its next instruction (sent with `handle.send()`). */
export const WAIT_FOR_INSTRUCTION = 'wait_for_instruction';

/**
 * The orchestration host tools (spawn a subagent, instruct it, await it), run on the supervisor.
 * Named here, below the loop and the protocol, so both can tell them apart (src/protocol re-exports them).
 */
export const SPAWN_AGENT = 'spawn_agent';
export const SEND_INSTRUCTION = 'send_instruction';
export const AWAIT_AGENTS = 'await_agents';
/** Names of the orchestration tools. */
export const ORCHESTRATION_TOOL_NAMES: ReadonlySet<string> = new Set([
  SPAWN_AGENT,
  SEND_INSTRUCTION,
  AWAIT_AGENTS,
]);

/**
 * Orchestration tools a retry could repeat the effect of: when a call's answer is lost on its way
 * back (a Redis connection dropped, a port closed), the supervisor may already have started the
 * child or queued the instruction, and a retry would start a second child or send it twice. They
 * are never retried, and a definition's `toolConfig.<tool>.retry` for them is refused.
 */
export const NEVER_RETRIED_TOOL_NAMES: ReadonlySet<string> = new Set([SPAWN_AGENT, SEND_INSTRUCTION]);

/** Arguments of `complete_task`, after validation. */
export type CompleteTaskArgs = {
  readonly result: unknown;
};

/** Arguments of `wait_for_instruction`, after validation. */
export type WaitForInstructionArgs = {
  readonly reason?: string;
};

/** The behaviour a declaration is bound to. */
export type ToolExecute<Args> = (args: Args, ctx: ToolContext) => ToolOutcome | Promise<ToolOutcome>;

const unbound = (name: string) => (): ToolOutcome => ({
  ok: false,
  text: `${name} is not connected to a supervisor here, so it cannot run.`,
});

/**
 * Declares `complete_task`. With `outputSchema`, the result's schema is part of the tool's
 * parameters: the model sees it and the toolbox validates the result before `execute` runs.
 * Without `execute` (e.g. to preview a prompt) a call fails with a "not connected" message.
 */
export function declareCompleteTask(
  execute?: ToolExecute<CompleteTaskArgs>,
  options: { readonly outputSchema?: JsonSchema } = {},
): Tool<CompleteTaskArgs> {
  const { $schema: _dialect, ...resultSchema } = options.outputSchema ?? {
    type: 'object',
    description: 'The result of the task.',
  };
  const declaration: Tool<CompleteTaskArgs> = {
    name: COMPLETE_TASK,
    description:
      'Deliver the result of your task and end it. Call it exactly once, when the work is done; ' +
      'the task is not finished until this call succeeds. If it fails, fix the result and call it again.',
    parameters: {
      type: 'object',
      properties: { result: resultSchema },
      required: ['result'],
      additionalProperties: false,
    },
    readOnly: true,
    // Answered by the supervisor (or the loop, in a session), not by code of the agent's thread.
    timeoutMs: 0,
    execute: execute ?? unbound(COMPLETE_TASK),
  };
  // A result schema of the caller's is compiled and checked at registration like any other.
  if (options.outputSchema === undefined) markBuiltinTools([declaration]);
  return declaration;
}

/**
 * Declares `wait_for_instruction`: the agent parks until the supervisor sends an instruction,
 * which becomes the result of the call. Without `execute` a call fails with a "not connected"
 * message.
 */
export function declareWaitForInstruction(
  execute?: ToolExecute<WaitForInstructionArgs>,
): Tool<WaitForInstructionArgs> {
  const declaration: Tool<WaitForInstructionArgs> = {
    name: WAIT_FOR_INSTRUCTION,
    description:
      'Pause until the supervisor sends you an instruction; the instruction is the result of this ' +
      'call. Use it when you have nothing left to do but expect further work.',
    parameters: {
      type: 'object',
      properties: {
        reason: { type: 'string', description: 'Why you are waiting, or what you are waiting for.' },
      },
      additionalProperties: false,
    },
    readOnly: true,
    // Waits by design, for as long as the supervisor sends nothing.
    timeoutMs: 0,
    execute: execute ?? unbound(WAIT_FOR_INSTRUCTION),
  };
  markBuiltinTools([declaration]);
  return declaration;
}
