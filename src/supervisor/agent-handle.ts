/** The caller's handle on one agent. */
import { EventEmitter } from 'eventemitter3';
import type { AgentOutcome } from '../loop/types.ts';
import type { ApproveOptions, DenyOptions } from './approvals.ts';
import type {
  AgentApproval,
  AgentDecision,
  AgentEnded,
  AgentInstructed,
  AgentRestarted,
  AgentRound,
  AgentStarted,
  AgentText,
  AgentToolCall,
  AgentTurn,
  AgentUsage,
  AgentWaiting,
  AgentWarnings,
} from './events.ts';

/** Events of one agent, with the same payloads as the supervisor's `agent:*` events. */
export interface AgentHandleEvents {
  started: [event: AgentStarted];
  round: [event: AgentRound];
  tool: [event: AgentToolCall];
  usage: [event: AgentUsage];
  text: [event: AgentText];
  waiting: [event: AgentWaiting];
  warnings: [event: AgentWarnings];
  instructed: [event: AgentInstructed];
  turn: [event: AgentTurn];
  restarted: [event: AgentRestarted];
  /** A tool call of this agent waits for a decision: answer with {@link AgentHandle.approve} or `deny`. */
  approval: [event: AgentApproval];
  decision: [event: AgentDecision];
  ended: [event: AgentEnded];
}

/**
 * What a handle asks of its supervisor: one object for all its handles, so that a handle holds no
 * closure of its own (nor anything of the agent's record, which a handle outlives).
 */
export interface HandleControl {
  send(agentId: string, text: string): void;
  cancel(agentId: string, reason: string): void;
  /** A listener of `event` was added (the supervisor asks its engine for the signals it needs). */
  listen(event: string | symbol): void;
  approve(agentId: string, requestId: string, options?: ApproveOptions): Promise<void>;
  deny(agentId: string, requestId: string, reason?: string, options?: DenyOptions): Promise<void>;
}

/**
 * A spawned agent: send it instructions, cancel it, await its outcome. It keeps working after the
 * agent ended, even once its supervisor has evicted it (`retainEndedAgents`): `result` stays
 * settled, `send` throws UserError `agent_not_running`, `cancel` does nothing. After `ended` it
 * emits nothing more and drops its listeners.
 */
export class AgentHandle extends EventEmitter<AgentHandleEvents> {
  /** Unique agent id; also the journal file name. */
  readonly id: string;
  /** Definition name. */
  readonly agent: string;
  readonly parentId: string | undefined;
  /**
   * Settles once, with the Completed or Failed outcome; it never rejects, so a fan-out keeps
   * every partial result when some agents fail. A completed outcome's `answer` and `result` are
   * the model's, unmasked: they are what the program asked for, and masking would corrupt a value
   * that only looks like a key. Events, errors and everything troupe writes are masked.
   */
  readonly result: Promise<AgentOutcome>;
  readonly #control: HandleControl;

  /** @internal */
  constructor(
    id: string,
    agent: string,
    parentId: string | undefined,
    result: Promise<AgentOutcome>,
    control: HandleControl,
  ) {
    super();
    this.id = id;
    this.agent = agent;
    this.parentId = parentId;
    this.result = result;
    this.#control = control;
  }

  override on<T extends EventEmitter.EventNames<AgentHandleEvents>>(
    event: T,
    fn: EventEmitter.EventListener<AgentHandleEvents, T>,
    context?: unknown,
  ): this {
    this.#control.listen(event);
    return super.on(event, fn, context);
  }

  override addListener<T extends EventEmitter.EventNames<AgentHandleEvents>>(
    event: T,
    fn: EventEmitter.EventListener<AgentHandleEvents, T>,
    context?: unknown,
  ): this {
    this.#control.listen(event);
    return super.addListener(event, fn, context);
  }

  override once<T extends EventEmitter.EventNames<AgentHandleEvents>>(
    event: T,
    fn: EventEmitter.EventListener<AgentHandleEvents, T>,
    context?: unknown,
  ): this {
    this.#control.listen(event);
    return super.once(event, fn, context);
  }

  /**
   * Sends an instruction; it is queued until the agent calls `wait_for_instruction`, never lost.
   * Throws UserError `instruction_too_large` for a text over `MAX_INSTRUCTION_BYTES` (1 MiB of UTF-8).
   */
  send(text: string): void {
    this.#control.send(this.id, text);
  }

  /** Cancels the agent: its provider request and running tool are aborted; it ends Failed(cancelled). */
  cancel(reason = 'cancelled by caller'): void {
    this.#control.cancel(this.id, reason);
  }

  /**
   * Approves this agent's call waiting on `requestId` (from the `approval` event): the tool runs.
   * `remember: 'session'` approves later requests of the same rule without asking (not a rule
   * holding a masked secret: see {@link ApproveOptions.remember}). Throws UserError
   * `approval_not_pending` when no such request of this agent waits.
   *
   * @example
   * handle.on('approval', ({ request }) => {
   *   if (request.tool === 'run_terminal_cmd') void handle.approve(request.requestId);
   *   else void handle.deny(request.requestId, 'only shell commands are allowed today');
   * });
   */
  approve(requestId: string, options?: ApproveOptions): Promise<void> {
    return this.#control.approve(this.id, requestId, options);
  }

  /** Denies this agent's call waiting on `requestId`; the model sees the denial with `reason`. Throws like {@link approve}. */
  deny(requestId: string, reason?: string, options?: DenyOptions): Promise<void> {
    return this.#control.deny(this.id, requestId, reason, options);
  }
}
