/**
 * Events of the redis backend's supervisor: the thread backend's events with the same payloads
 * (`hostId` is the number of the worker process running the agent), plus two of its own.
 * `thread:*` events are not emitted: threads and processes belong to the workers.
 */
import type { AgentHandle } from '../supervisor/agent-handle.ts';
import type { AgentWaiting, SupervisorEvents } from '../supervisor/events.ts';
import type { WorkerSignal } from './signals.ts';

/** An agent's job was parked: it waits for instruction `index` without holding a worker slot. */
export interface AgentParked extends AgentWaiting {
  readonly hostId: number;
  readonly index: number;
}

/** An agent's provider request waited out a 429 pause set by some agent on some worker. */
export interface ProviderPaused {
  readonly agentId: string;
  readonly provider: string;
  /** The worker the waiting agent runs on. */
  readonly hostId: number;
  readonly waitMs: number;
}

/** Event names and payloads of {@link RedisSupervisor}. */
export interface RedisSupervisorEvents extends SupervisorEvents {
  'agent:parked': [event: AgentParked];
  'provider:paused': [event: ProviderPaused];
}

/** Every event name the two backends share, e.g. to forward one supervisor's events to another. */
export const SUPERVISOR_EVENT_NAMES: readonly (keyof SupervisorEvents)[] = [
  'agent:spawned',
  'agent:started',
  'agent:round',
  'agent:tool',
  'agent:usage',
  'agent:text',
  'agent:waiting',
  'agent:warnings',
  'agent:instructed',
  'agent:completed',
  'agent:failed',
  'agent:restarted',
  'thread:started',
  'thread:crashed',
  'thread:respawned',
  'provider:backoff',
];

/** What the event mapper needs to know and do. */
export interface SignalTarget {
  emit<K extends keyof RedisSupervisorEvents>(name: K, ...args: RedisSupervisorEvents[K]): boolean;
  /** The agent's handle and parent, if the agent is this supervisor's and still running. */
  agent(agentId: string): { readonly handle: AgentHandle; readonly parentId: string | undefined } | undefined;
  /** The worker's end signal: read the outcome from job state. */
  ended(agentId: string): void;
}

/** Turns one worker signal into supervisor and handle events. */
export function dispatchSignal(target: SignalTarget, signal: WorkerSignal): void {
  if (signal.type === 'ended') {
    target.ended(signal.agentId);
    return;
  }
  const agent = target.agent(signal.agentId);
  if (!agent) return;
  const { handle } = agent;
  const ref = { agentId: signal.agentId, parentId: agent.parentId, agent: handle.agent };
  switch (signal.type) {
    case 'started': {
      const event = { ...ref, hostId: signal.workerId, resumed: signal.resumed };
      target.emit('agent:started', event);
      handle.emit('started', event);
      if (signal.restart > 0) {
        const restarted = {
          ...ref,
          restart: signal.restart,
          cause: {
            name: 'SystemError',
            code: 'worker_lost',
            message:
              "The agent's previous run ended without finishing (its worker died or lost the job); it resumed from its journal",
            fields: { hostId: signal.workerId },
          },
        };
        target.emit('agent:restarted', restarted);
        handle.emit('restarted', restarted);
      }
      return;
    }
    case 'round': {
      const event = { ...ref, round: signal.round, estimatedTokens: signal.estimatedTokens };
      target.emit('agent:round', event);
      handle.emit('round', event);
      return;
    }
    case 'tool_call': {
      const event = { ...ref, round: signal.round, tool: signal.name, ok: signal.ok };
      target.emit('agent:tool', event);
      handle.emit('tool', event);
      return;
    }
    case 'receipt': {
      const { type: _type, agentId: _agentId, ...rest } = signal;
      const event = { ...ref, ...rest };
      target.emit('agent:usage', event);
      handle.emit('usage', event);
      return;
    }
    case 'text': {
      const event = { ...ref, text: signal.text };
      target.emit('agent:text', event);
      handle.emit('text', event);
      return;
    }
    case 'waiting':
      target.emit('agent:waiting', ref);
      handle.emit('waiting', ref);
      return;
    case 'warnings': {
      const event = { ...ref, warnings: signal.warnings };
      target.emit('agent:warnings', event);
      handle.emit('warnings', event);
      return;
    }
    case 'instructed': {
      const event = { ...ref, text: signal.text };
      target.emit('agent:instructed', event);
      handle.emit('instructed', event);
      return;
    }
    case 'parked':
      target.emit('agent:parked', { ...ref, hostId: signal.workerId, index: signal.index });
      return;
    case 'backoff':
      target.emit('provider:backoff', { provider: signal.provider, retryAfterMs: signal.retryAfterMs });
      return;
    case 'paused':
      target.emit('provider:paused', {
        agentId: signal.agentId,
        provider: signal.provider,
        hostId: signal.workerId,
        waitMs: signal.waitMs,
      });
      return;
  }
}
