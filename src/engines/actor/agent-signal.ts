/**
 * What the supervisor learns of an agent's audit events. Both engines forward it (actor hosts over
 * their events port, redis workers over a stream), so both build it here.
 */
import { TOOL_OUTPUT_PREVIEW_CHARS } from '../../constants.ts';
import type { AuditEventInput } from '../../journal/events.ts';
import { redactText, redactValue } from '../../journal/redact.ts';
import { ASSISTANT_PREFIX } from '../../loop/history-format.ts';
import type { ApprovalDecider } from '../../protocol/approvals.ts';
import type { AgentSignal, OptionalSignal } from '../../protocol/messages.ts';

const monotonicNow = (): number => performance.now();

/** Maps one agent's audit events to signals; undefined for events the supervisor is not told about. */
export type AgentSignals = (event: AuditEventInput) => AgentSignal | undefined;

/** Whether anyone listens for an optional signal; the others are not built (masking, previews). */
export type WantsSignal = (kind: OptionalSignal) => boolean;

const WANTS_ALL: WantsSignal = () => true;

/**
 * The signal mapper of one run of agent `agentId`. It remembers when each tool call started, to
 * report its duration with its result (a call's entry is dropped when its result comes). Optional
 * signals `wants` refuses map to undefined: they were built (arguments masked, a preview of every
 * tool output masked and cut) and then dropped by the host when nobody listened, on the path of
 * every tool result.
 */
export function agentSignals(
  agentId: string,
  now: () => number = monotonicNow,
  wants: WantsSignal = WANTS_ALL,
): AgentSignals {
  const started = new Map<string, number>();
  return (event) => {
    switch (event.type) {
      case 'InferenceSubmitted':
        // A round starts with its first request; later requests of the round are steps in it.
        return (event.request ?? 1) === 1 && wants('round')
          ? { type: 'round', agentId, round: event.round, estimatedTokens: event.estimatedTokens }
          : undefined;
      case 'ToolCall':
        if (!wants('tool_call')) return undefined;
        started.set(event.callId, now());
        return {
          type: 'tool_call',
          agentId,
          round: event.round,
          // The model names the tool: a name no tool has (refused) can be anything it read.
          name: redactText(event.name),
          callId: event.callId,
          phase: 'started',
          ok: undefined,
          args: redactValue(event.args ?? event.rawArgs ?? {}),
        };
      case 'ToolResult': {
        const start = started.get(event.callId);
        started.delete(event.callId);
        if (!wants('tool_call')) return undefined;
        return {
          type: 'tool_call',
          agentId,
          round: event.round,
          name: redactText(event.name),
          callId: event.callId,
          phase: 'completed',
          ok: event.ok,
          output: preview(event.text),
          ...(start === undefined ? {} : { durationMs: Math.max(0, now() - start) }),
          ...(event.refused ? { refused: true } : {}),
          ...(event.replay === undefined ? {} : { replay: event.replay }),
        };
      }
      case 'ProviderReceipt':
        if (!wants('receipt')) return undefined;
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
          usage: event.receipt.usage,
          endedAt: Date.now(),
          ...(event.errorCode === undefined ? {} : { errorCode: event.errorCode }),
        };
      case 'HistoryAppended':
        // The model's own text, without the history's "Assistant: " prefix, masked here where
        // every credential the agent was given is known: it repeats what it read.
        return event.kind === 'assistant' && wants('text')
          ? { type: 'text', agentId, text: redactText(event.text.slice(ASSISTANT_PREFIX.length)) }
          : undefined;
      case 'Started':
        return event.warnings && event.warnings.length > 0
          ? { type: 'warnings', agentId, warnings: redactValue(event.warnings) }
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
      case 'TurnAnswered':
        return {
          type: 'turn',
          agentId,
          turn: event.turn,
          answer: event.answer,
          ...(event.result === undefined ? {} : { result: event.result }),
        };
      case 'TurnCancelled':
        return { type: 'turn', agentId, turn: event.turn, answer: '', cancelled: event.reason };
      default:
        return undefined;
    }
  };
}

/**
 * The start of a tool's output for an event: masked first (so a secret cut in half by the limit
 * cannot slip past the masking), then cut to TOOL_OUTPUT_PREVIEW_CHARS with an ellipsis.
 */
export function preview(text: string): string {
  const masked = redactText(text);
  return masked.length <= TOOL_OUTPUT_PREVIEW_CHARS
    ? masked
    : `${masked.slice(0, TOOL_OUTPUT_PREVIEW_CHARS - 1)}…`;
}
