/**
 * `complete_task` and `wait_for_instruction` bound to one agent run: they are declared by the
 * tools area and implemented here against the run's channels (the supervisor, or in-process
 * defaults). Declarations are cached so their parameter schemas are compiled once, not per agent.
 */
import { canonicalJson } from '../journal/canonical-json.ts';
import { extend } from '../objects.ts';
import {
  COMPLETE_TASK,
  type CompleteTaskArgs,
  declareCompleteTask,
  declareWaitForInstruction,
  WAIT_FOR_INSTRUCTION,
  type WaitForInstructionArgs,
} from '../tools/builtin/orchestration.ts';
import { backoffDelay } from '../tools/retry.ts';
import type { JsonSchema, Tool, ToolContext, ToolOutcome } from '../tools/types.ts';
import type { RunContext } from './context.ts';
import type { AgentChannels } from './types.ts';

const completeDeclarations = new Map<string, Tool<CompleteTaskArgs>>();
const SESSION_WAIT_REFUSAL =
  "In a session your next instruction is the user's next message: answer this one and end your turn.";
const waitDeclaration = declareWaitForInstruction();

function completeDeclaration(outputSchema: JsonSchema | undefined): Tool<CompleteTaskArgs> {
  const key = outputSchema === undefined ? '' : canonicalJson(outputSchema);
  let declaration = completeDeclarations.get(key);
  if (!declaration) {
    declaration = declareCompleteTask(undefined, outputSchema === undefined ? {} : { outputSchema });
    completeDeclarations.set(key, declaration);
  }
  return declaration;
}

/**
 * The two routed tools, bound to the run `holder` will hold: it is read lazily, as it exists only
 * once the toolbox does.
 */
export function routedTools(
  holder: { readonly run?: RunContext | undefined },
  channels: AgentChannels,
  outputSchema: JsonSchema | undefined,
): Tool[] {
  // Per agent, so built with extend (src/objects.ts): the toolbox reads these on every call.
  const complete: Tool<CompleteTaskArgs> = extend(completeDeclaration(outputSchema), {
    async execute(args: CompleteTaskArgs): Promise<ToolOutcome> {
      const run = runOf(holder);
      if (run.completion)
        return { ok: false, text: 'complete_task was already called: the task is complete. Stop now.' };
      // A session's turns end locally: each one may deliver a result (the supervisor's
      // complete_task ends the agent).
      const answer =
        channels.completeTask && !run.session ? await channels.completeTask(args.result) : { accepted: true };
      if (!answer.accepted) return { ok: false, text: answer.message ?? 'The result was refused.' };
      run.completion = { value: args.result };
      return { ok: true, text: 'Task complete: your result was delivered.', data: args.result };
    },
  });
  const wait: Tool<WaitForInstructionArgs> = extend(waitDeclaration, {
    // Not async: a parked agent waits here, and a suspended frame would cost it for nothing.
    execute(_args: WaitForInstructionArgs, toolCtx: ToolContext): ToolOutcome | Promise<ToolOutcome> {
      const run = runOf(holder);
      if (run.session) return { ok: false, text: SESSION_WAIT_REFUSAL };
      if (!channels.waitForInstruction) {
        return {
          ok: false,
          text: 'wait_for_instruction is not connected to a supervisor here: no instruction can arrive.',
        };
      }
      return waitForInstruction(run, channels.waitForInstruction, run.currentCallId, toolCtx.signal).then(
        instructionOutcome,
      );
    },
  });
  return [complete as unknown as Tool, wait as unknown as Tool];
}

function runOf(holder: { readonly run?: RunContext | undefined }): RunContext {
  if (!holder.run) throw new Error('the run is not ready');
  return holder.run;
}

function instructionOutcome(text: string | null): ToolOutcome {
  return text === null
    ? { ok: true, text: 'No instruction arrived. Continue with what you have, or finish your task.' }
    : { ok: true, text: `Instruction: ${text}` };
}

/**
 * Parks for the next instruction, journalling Waiting and Instructed. Honours
 * `toolConfig.wait_for_instruction.retry`: each attempt waits up to its backoff delay; without a
 * retry policy the wait has no limit.
 */
export async function waitForInstruction(
  run: RunContext,
  wait: NonNullable<AgentChannels['waitForInstruction']>,
  callId: string,
  signal: AbortSignal,
): Promise<string | null> {
  const index = run.instructionsReceived;
  run.record({ type: 'Waiting', agentId: run.agentId, callId, index });
  run.commitJournal();
  const policy = run.definition.toolConfig[WAIT_FOR_INSTRUCTION]?.retry;
  const attempts = policy ? policy.maxRetries + 1 : 1;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    if (signal.aborted) return null;
    const timeoutMs = policy ? backoffDelay(policy, attempt - 1) : undefined;
    const text = await wait(index, timeoutMs, signal);
    if (text !== null) {
      run.instructionsReceived = index + 1;
      run.record({ type: 'Instructed', agentId: run.agentId, index, text, callId });
      return text;
    }
  }
  return null;
}

export { COMPLETE_TASK, WAIT_FOR_INSTRUCTION };
