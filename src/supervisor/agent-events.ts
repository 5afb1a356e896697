/**
 * What an engine reports about an agent, as events: each report is emitted on the supervisor
 * (`agent:*`) and, for most, on the agent's handle, with the same payload. One mapping for every
 * engine.
 */
import type { EventEmitter } from 'eventemitter3';
import type { AgentReport } from '../engines/engine.ts';
import type { UsageRequest } from '../loop/usage-record.ts';
import { extend } from '../objects.ts';
import type { OptionalSignal } from '../protocol/messages.ts';
import type { AgentHandle } from './agent-handle.ts';
import type { AgentRef, AgentUsage, SupervisorEvents } from './events.ts';

/**
 * The optional signal behind an event of the supervisor (`agent:tool`) or of a handle (`tool`):
 * engines send it only once someone listens for one of its events.
 */
const SIGNAL_OF_EVENT: ReadonlyMap<string | symbol, OptionalSignal> = new Map<string, OptionalSignal>([
  ['agent:round', 'round'],
  ['round', 'round'],
  ['agent:tool', 'tool_call'],
  ['tool', 'tool_call'],
  ['agent:usage', 'receipt'],
  ['usage', 'receipt'],
  ['agent:text', 'text'],
  ['text', 'text'],
]);

/** The optional signal a listener of `event` needs, if any. */
export function signalOfEvent(event: string | symbol): OptionalSignal | undefined {
  return SIGNAL_OF_EVENT.get(event);
}

/**
 * Emits the events of `report` about the agent `ref` names: `ref`'s members, then the report's
 * (built with {@link extend}: one per event, see src/objects.ts).
 */
export function emitAgentReport(
  supervisor: EventEmitter<SupervisorEvents>,
  handle: AgentHandle,
  ref: AgentRef,
  report: AgentReport,
): void {
  switch (report.type) {
    case 'started': {
      const event = extend(ref, { hostId: report.hostId, resumed: report.resumed });
      supervisor.emit('agent:started', event);
      handle.emit('started', event);
      return;
    }
    case 'restarted': {
      const event = extend(ref, { restart: report.restart, cause: report.cause, charged: report.charged });
      supervisor.emit('agent:restarted', event);
      handle.emit('restarted', event);
      return;
    }
    case 'parked':
      supervisor.emit('agent:parked', extend(ref, { hostId: report.hostId, index: report.index }));
      return;
    case 'round': {
      const event = extend(ref, { round: report.round, estimatedTokens: report.estimatedTokens });
      supervisor.emit('agent:round', event);
      handle.emit('round', event);
      return;
    }
    case 'tool_call': {
      const { type: _type, agentId: _agentId, name, ...rest } = report;
      const event = extend(ref, rest, { tool: name });
      supervisor.emit('agent:tool', event);
      handle.emit('tool', event);
      return;
    }
    case 'receipt': {
      const { type: _type, agentId: _agentId, ...rest } = report;
      const event = extend(ref, rest);
      supervisor.emit('agent:usage', event);
      handle.emit('usage', event);
      return;
    }
    case 'text': {
      const event = extend(ref, { text: report.text });
      supervisor.emit('agent:text', event);
      handle.emit('text', event);
      return;
    }
    case 'waiting':
      supervisor.emit('agent:waiting', ref);
      handle.emit('waiting', ref);
      return;
    case 'warnings': {
      const event = extend(ref, { warnings: report.warnings });
      supervisor.emit('agent:warnings', event);
      handle.emit('warnings', event);
      return;
    }
    case 'instructed': {
      const event = extend(ref, { text: report.text });
      supervisor.emit('agent:instructed', event);
      handle.emit('instructed', event);
      return;
    }
    case 'turn': {
      const { type: _type, agentId: _agentId, ...rest } = report;
      const event = extend(ref, rest);
      supervisor.emit('agent:turn', event);
      handle.emit('turn', event);
      return;
    }
  }
}

/**
 * Emits `agent:usage` (and the handle's `usage`) for what an ended agent spent beyond the usage
 * events emitted for it (`unreported: true`, see {@link AgentUsage.unreported}): the usage sink's
 * `unreported` record, as an event.
 */
export function emitUnreportedUsage(
  supervisor: EventEmitter<SupervisorEvents>,
  handle: AgentHandle,
  ref: AgentRef,
  request: UsageRequest & { readonly unreported: true },
): void {
  const { usage } = request;
  const event = extend(ref, {
    round: request.round,
    step: request.step,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    estimated: usage.estimated === true,
    costUsd: request.costUsd,
    latencyMs: request.latencyMs,
    usage,
    endedAt: request.endedAt,
    unreported: true as const,
  });
  supervisor.emit('agent:usage', event);
  handle.emit('usage', event);
}
