/**
 * Errors an engine hands the supervisor, masked before anything else sees them. A thread's crash
 * cause is the message of whatever killed it: an uncaught error a tool threw, which can quote a
 * key it read. The loop masks the errors it ends an agent with; causes made outside the loop
 * (thread crashes, lost runners, start failures) are masked here, once, so `thread:crashed`,
 * `agent:restarted`, a crashed agent's outcome and the spans made from them never carry a
 * credential (redaction is idempotent: an error masked already comes out the same).
 */
import type { AgentReport } from '../engines/engine.ts';
import type { EngineEvents } from '../engines/events.ts';
import type { SerializedError } from '../errors.ts';
import { redactText, redactValue } from '../journal/redact.ts';
import { maskedRequest } from '../loop/approvals.ts';
import type { AgentOutcome } from '../loop/types.ts';
import type { TraceEvent } from '../protocol/messages.ts';

/** `cause` with its message and fields masked. */
export function maskedCause(cause: SerializedError): SerializedError {
  return redactValue(cause);
}

/** `outcome` with its error masked when it failed. */
export function maskedOutcome(outcome: AgentOutcome): AgentOutcome {
  return outcome.status === 'failed' ? { ...outcome, error: maskedCause(outcome.error) } : outcome;
}

/**
 * `report` with the cause of a restart masked, and what an agent's thread or worker masked
 * already masked again here: the model's text, a tool call's name, arguments and output, an
 * approval request's arguments, rule and reason, startup warnings and span content. The agent's thread knows the credentials it was given; this one
 * knows those the program registered (`registerSecretValues`) and the supervisor's, which the
 * agent's thread may never have been told. Redaction is idempotent: what was masked stays so.
 */
export function maskedReport(report: AgentReport): AgentReport {
  switch (report.type) {
    case 'restarted':
      return { ...report, cause: maskedCause(report.cause) };
    case 'text':
      return { ...report, text: redactText(report.text) };
    case 'tool_call':
      return {
        ...report,
        name: redactText(report.name),
        ...(report.args === undefined ? {} : { args: redactValue(report.args) }),
        ...(report.output === undefined ? {} : { output: redactText(report.output) }),
      };
    case 'warnings':
      return { ...report, warnings: redactValue(report.warnings) };
    case 'approval':
      return { ...report, request: maskedRequest(report.request) };
    case 'decided':
      return {
        ...report,
        rule: redactText(report.rule),
        decision:
          report.decision.reason === undefined
            ? report.decision
            : { ...report.decision, reason: redactText(report.decision.reason) },
      };
    case 'trace':
      return { ...report, event: maskedTraceEvent(report.event) };
    default:
      return report;
  }
}

/** A trace event's model-chosen names and content masked (see {@link maskedReport}). */
function maskedTraceEvent(event: TraceEvent): TraceEvent {
  switch (event.type) {
    case 'Started':
      return event.content === undefined ? event : { ...event, content: redactValue(event.content) };
    case 'Text':
      return { ...event, text: redactText(event.text) };
    case 'ToolCall':
      return {
        ...event,
        name: redactText(event.name),
        modelName: redactText(event.modelName),
        ...(event.args === undefined ? {} : { args: redactValue(event.args) }),
      };
    case 'ToolResult':
      return {
        ...event,
        name: redactText(event.name),
        ...(event.text === undefined ? {} : { text: redactText(event.text) }),
      };
    case 'Instructed':
      return event.text === undefined ? event : { ...event, text: redactText(event.text) };
    default:
      return event;
  }
}

/** The arguments of engine event `name`, the cause of a thread crash masked. */
export function maskedEngineEvent(name: keyof EngineEvents, args: readonly unknown[]): readonly unknown[] {
  if (name !== 'thread:crashed') return args;
  const [event, ...rest] = args as EngineEvents['thread:crashed'];
  return [{ ...event, cause: maskedCause(event.cause) }, ...rest];
}
