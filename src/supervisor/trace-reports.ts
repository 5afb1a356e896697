/**
 * What an engine reports, as the supervisor's tracing records it (src/telemetry/agent-tracing.ts):
 * agent reports and engine events become span starts, ends and events.
 */
import type { AgentReport } from '../engines/engine.ts';
import type { EngineEvents } from '../engines/events.ts';
import type { AgentTracing } from '../telemetry/agent-tracing.ts';

/** Records `report` on the agent's spans. */
export function traceReport(tracing: AgentTracing, report: AgentReport): void {
  switch (report.type) {
    case 'trace':
      tracing.event(report.agentId, report.at, report.event);
      return;
    case 'started':
      tracing.started(report.agentId, report.hostId, report.resumed);
      return;
    case 'restarted':
      tracing.restarted(report.agentId, report.restart, report.cause, report.charged);
      return;
    case 'decided':
      tracing.approvalDecided(report.agentId, {
        callId: report.callId,
        tool: report.tool,
        rule: report.rule,
        approved: report.decision.approved,
        by: report.decision.by,
      });
      return;
    case 'parked':
      tracing.parked(report.agentId, report.hostId, report.index);
      return;
    default:
      return;
  }
}

/** Records engine event `name` on the spans of the agents it concerns. */
export function traceEngineEvent(
  tracing: AgentTracing,
  name: keyof EngineEvents,
  args: readonly unknown[],
): void {
  if (name === 'thread:crashed') {
    const [event] = args as EngineEvents['thread:crashed'];
    tracing.threadCrashed(event.hostId, event.agents, event.cause);
  } else if (name === 'provider:backoff') {
    const [event] = args as EngineEvents['provider:backoff'];
    tracing.backoff(event.provider, event.retryAfterMs);
  } else if (name === 'provider:paused') {
    const [event] = args as EngineEvents['provider:paused'];
    tracing.paused(event.agentId, event.provider, event.waitMs);
  }
}
