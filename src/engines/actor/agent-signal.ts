/**
 * What the supervisor learns of an agent's audit events. Both engines forward it (actor hosts over
 * their events port, redis workers over a stream), so both build it here.
 */
import type { AuditEventInput } from '../../journal/events.ts';
import { ASSISTANT_PREFIX } from '../../loop/history-format.ts';
import type { ApprovalDecider } from '../../protocol/approvals.ts';
import type { AgentSignal } from '../../protocol/messages.ts';

/** The signal for `event`, or undefined for events the supervisor is not told about. */
export function agentSignal(agentId: string, event: AuditEventInput): AgentSignal | undefined {
  switch (event.type) {
    case 'InferenceSubmitted':
      // A round starts with its first request; later requests of the round are steps in it.
      return (event.request ?? 1) === 1
        ? { type: 'round', agentId, round: event.round, estimatedTokens: event.estimatedTokens }
        : undefined;
    case 'ToolCall':
      return { type: 'tool_call', agentId, round: event.round, name: event.name, ok: undefined };
    case 'ToolResult':
      return { type: 'tool_call', agentId, round: event.round, name: event.name, ok: event.ok };
    case 'ProviderReceipt':
      return {
        type: 'receipt',
        agentId,
        round: event.round,
        step: event.step,
        inputTokens: event.receipt.usage.inputTokens,
        outputTokens: event.receipt.usage.outputTokens,
        estimated: event.receipt.usage.estimated === true,
        costUsd: event.receipt.costUsd ?? null,
        latencyMs: event.receipt.latencyMs,
      };
    case 'HistoryAppended':
      // The model's own text, without the history's "Assistant: " prefix.
      return event.kind === 'assistant'
        ? { type: 'text', agentId, text: event.text.slice(ASSISTANT_PREFIX.length) }
        : undefined;
    case 'Started':
      return event.warnings && event.warnings.length > 0
        ? { type: 'warnings', agentId, warnings: event.warnings }
        : undefined;
    case 'Waiting':
      return { type: 'waiting', agentId };
    case 'Instructed':
      return { type: 'instructed', agentId, text: event.text };
    case 'ApprovalDecided':
      return {
        type: 'decided',
        agentId,
        requestId: event.requestId,
        callId: event.callId,
        tool: event.name,
        rule: event.rule,
        decision: {
          approved: event.approved,
          by: event.by as ApprovalDecider,
          ...(event.decider === undefined ? {} : { decider: event.decider }),
          ...(event.reason === undefined ? {} : { reason: event.reason }),
          ...(event.remember === undefined ? {} : { remember: event.remember }),
        },
      };
    default:
      return undefined;
  }
}
