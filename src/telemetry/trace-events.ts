/**
 * What the supervisor's tracing is told of an agent's audit events, built where the agent runs:
 * timing and figures always, content (task, system prompt, tool arguments and results, the model's
 * text, instructions) only when the agent's trace context asks for it, masked with `redactValue`
 * before it leaves the thread or worker. Tool names are masked too: the model chooses them.
 */
import type { AuditEventInput } from '../journal/events.ts';
import { redactText, redactValue } from '../journal/redact.ts';
import { ASSISTANT_PREFIX } from '../loop/history-format.ts';
import type { AgentSignal, TraceEvent } from '../protocol/messages.ts';

/** The trace event of `event`, or undefined for events spans are not made from. */
export function traceEventOf(event: AuditEventInput, captureContent: boolean): TraceEvent | undefined {
  switch (event.type) {
    case 'Started':
      return {
        type: 'Started',
        provider: event.provider,
        model: event.model,
        definition: event.definition.name,
        ...(captureContent
          ? {
              content: redactValue({
                task: event.task,
                systemPrompt: event.systemPrompt,
                context: event.context,
              }),
            }
          : {}),
      };
    case 'InferenceSubmitted':
      return {
        type: 'InferenceSubmitted',
        round: event.round,
        step: event.step,
        request: event.request ?? 1,
        estimatedTokens: event.estimatedTokens,
        tools: event.tools.length,
        ...(event.toolChoice === undefined ? {} : { toolChoice: event.toolChoice }),
        ...(event.captureFor === undefined ? {} : { captureFor: event.captureFor }),
        ...(event.modelSettings === undefined ? {} : { modelSettings: event.modelSettings }),
      };
    case 'ProviderReceipt':
      return {
        type: 'ProviderReceipt',
        round: event.round,
        step: event.step,
        receipt: event.receipt,
        ...(event.stopReason === undefined ? {} : { stopReason: event.stopReason }),
        ...(event.errorCode === undefined ? {} : { errorCode: event.errorCode }),
      };
    case 'HistoryAppended':
      return captureContent && event.kind === 'assistant'
        ? { type: 'Text', round: event.round, text: redactValue(event.text.slice(ASSISTANT_PREFIX.length)) }
        : undefined;
    case 'ToolCall':
      return {
        type: 'ToolCall',
        round: event.round,
        callId: event.callId,
        // The model names the tool: a name no tool has (refused) can be anything it read.
        name: redactText(event.name),
        modelName: redactText(event.modelName),
        ...(captureContent ? { args: redactValue(event.args ?? event.rawArgs ?? null) } : {}),
      };
    case 'ToolResult': {
      const data = event.data as { agentId?: unknown } | undefined;
      const child = event.name === 'spawn_agent' && event.ok ? data?.agentId : undefined;
      return {
        type: 'ToolResult',
        callId: event.callId,
        name: redactText(event.name),
        ok: event.ok,
        refused: event.refused === true,
        projectionAccepted: event.projectionAccepted,
        ...(typeof child === 'string' ? { child } : {}),
        ...(captureContent ? { text: redactValue(event.text) } : {}),
      };
    }
    case 'Waiting':
      return { type: 'Waiting', callId: event.callId, index: event.index };
    case 'Instructed':
      return {
        type: 'Instructed',
        callId: event.callId,
        index: event.index,
        ...(captureContent ? { text: redactValue(event.text) } : {}),
      };
    case 'Resumed':
      return { type: 'Resumed', nextRound: event.nextRound, pendingCallIds: event.pendingCallIds };
    default:
      return undefined;
  }
}

/** The `trace` signal of `event` for agent `agentId`, stamped now; undefined when it has none. */
export function traceSignal(
  agentId: string,
  event: AuditEventInput,
  captureContent: boolean,
  now: () => number = Date.now,
): AgentSignal | undefined {
  const traced = traceEventOf(event, captureContent);
  if (traced === undefined) return undefined;
  const at = event.ts === undefined ? now() : Date.parse(event.ts);
  return { type: 'trace', agentId, at, event: traced };
}
