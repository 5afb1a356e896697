/** Typed supervisor events: one stream for every agent, nested ones included. */
import type { SerializedError } from '../errors.ts';
import type { AgentOutcome } from '../loop/types.ts';

interface AgentRef {
  readonly agentId: string;
  /** The agent that spawned this one, if any. */
  readonly parentId: string | undefined;
  /** Definition name. */
  readonly agent: string;
}

export interface AgentSpawned extends AgentRef {
  readonly task: string;
  readonly metadata: Readonly<Record<string, unknown>>;
}
export interface AgentStarted extends AgentRef {
  readonly hostId: number;
  readonly resumed: boolean;
}
export interface AgentRound extends AgentRef {
  readonly round: number;
  readonly estimatedTokens: number;
}
export interface AgentToolCall extends AgentRef {
  readonly round: number;
  readonly tool: string;
  /** undefined when the call starts, true/false when its result is known. */
  readonly ok: boolean | undefined;
}
export interface AgentUsage extends AgentRef {
  readonly round: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd: number;
  readonly latencyMs: number;
}
export interface AgentText extends AgentRef {
  readonly text: string;
}
export interface AgentWaiting extends AgentRef {}
export interface AgentInstructed extends AgentRef {
  readonly text: string;
}
export interface AgentEnded extends AgentRef {
  readonly outcome: AgentOutcome;
}
export interface AgentRestarted extends AgentRef {
  readonly restart: number;
  readonly cause: SerializedError;
}
export interface ThreadEvent {
  readonly hostId: number;
}
export interface ThreadCrashed extends ThreadEvent {
  readonly cause: SerializedError;
  readonly agents: readonly string[];
}
export interface ProviderBackoff {
  readonly provider: string;
  readonly retryAfterMs: number;
}
/**
 * No `providers` were given and the environment names no API key, so the simulated model answers
 * (emitted once per supervisor, at its first spawn).
 */
export interface ProviderSimulated {
  readonly provider: 'simulated';
  /** What the warning says: why, and how to get a real model. */
  readonly message: string;
}

/** Event names and payloads of {@link Supervisor}. */
export interface SupervisorEvents {
  'agent:spawned': [event: AgentSpawned];
  'agent:started': [event: AgentStarted];
  'agent:round': [event: AgentRound];
  'agent:tool': [event: AgentToolCall];
  'agent:usage': [event: AgentUsage];
  'agent:text': [event: AgentText];
  'agent:waiting': [event: AgentWaiting];
  'agent:instructed': [event: AgentInstructed];
  'agent:completed': [event: AgentEnded];
  'agent:failed': [event: AgentEnded];
  'agent:restarted': [event: AgentRestarted];
  'thread:started': [event: ThreadEvent];
  'thread:crashed': [event: ThreadCrashed];
  'thread:respawned': [event: ThreadEvent];
  'provider:backoff': [event: ProviderBackoff];
  'provider:simulated': [event: ProviderSimulated];
}
