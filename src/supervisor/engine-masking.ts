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
import { redactValue } from '../journal/redact.ts';
import type { AgentOutcome } from '../loop/types.ts';

/** `cause` with its message and fields masked. */
export function maskedCause(cause: SerializedError): SerializedError {
  return redactValue(cause);
}

/** `outcome` with its error masked when it failed. */
export function maskedOutcome(outcome: AgentOutcome): AgentOutcome {
  return outcome.status === 'failed' ? { ...outcome, error: maskedCause(outcome.error) } : outcome;
}

/** `report` with the cause of a restart masked; other reports are masked where the agent runs. */
export function maskedReport(report: AgentReport): AgentReport {
  return report.type === 'restarted' ? { ...report, cause: maskedCause(report.cause) } : report;
}

/** The arguments of engine event `name`, the cause of a thread crash masked. */
export function maskedEngineEvent(name: keyof EngineEvents, args: readonly unknown[]): readonly unknown[] {
  if (name !== 'thread:crashed') return args;
  const [event, ...rest] = args as EngineEvents['thread:crashed'];
  return [{ ...event, cause: maskedCause(event.cause) }, ...rest];
}
