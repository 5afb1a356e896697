/**
 * The supervisor's approvals: requests its agents are waiting on, the `agent:approval` and
 * `agent:decision` events, `approve` / `deny`, and rules remembered for the session. The same for
 * every engine; a decision reaches the agent through `Engine.deliver` like an instruction.
 *
 * A request is announced once per request id, however often its agent waits on it (a restarted or
 * resumed agent waits again under the same id). A request whose rule was approved with
 * `remember: 'session'` is approved at once, without an event; a request nobody listens for is
 * denied at once (`approvals.unattended: 'deny'`, the default), so a program that never handles
 * approvals gets clear denials instead of agents parked until their timeout.
 */
import { UserError } from '../errors.ts';
import { extend } from '../objects.ts';
import { type ApprovalDecision, type ApprovalRequest, rememberable } from '../protocol/approvals.ts';
import type { AgentApproval, AgentDecision, AgentRef } from './events.ts';

/** Options of {@link ApprovalBook.approve}. */
export interface ApproveOptions {
  /**
   * `session`: later requests of the same rule (by any agent of this supervisor) are approved
   * without asking. Not for a request whose rule holds a masked secret (it would approve the same
   * call with any value): that request is approved for its call only (`remember: 'call'`).
   * @default 'call'
   */
  readonly remember?: 'call' | 'session';
  /** Who approved, recorded in the journal. @default 'program' */
  readonly decider?: string;
  /** `rule` when a rule answered for a person (a CLI `--approve` rule). @default 'person' */
  readonly by?: 'person' | 'rule';
}

/** Options of {@link ApprovalBook.deny}. */
export interface DenyOptions {
  /** Who denied, recorded in the journal. @default 'program' */
  readonly decider?: string;
  /** `rule` when no person was asked (a run without a terminal). @default 'person' */
  readonly by?: 'person' | 'rule';
}

/** What the book needs from the supervisor. */
export interface ApprovalBookHost {
  /** Delivers a decision to the agent (Engine.deliver). */
  deliver(agentId: string, requestId: string, decision: ApprovalDecision): Promise<void>;
  /** Whether anyone listens for the agent's requests (`agent:approval`, or the handle's `approval`). */
  listening(agentId: string): boolean;
  /** Whether asks nobody listens for wait (`wait`) or are denied at once (`deny`). */
  readonly unattended: 'deny' | 'wait';
  emitApproval(event: AgentApproval): void;
  emitDecision(event: AgentDecision): void;
}

interface Pending {
  readonly ref: AgentRef;
  readonly request: ApprovalRequest;
}

/** Requests waiting for decisions, by request id. */
export class ApprovalBook {
  readonly #host: ApprovalBookHost;
  readonly #pending = new Map<string, Pending>();
  /**
   * Request ids decided here or announced as decided, with their agent: a late report of one is not
   * announced again. Forgotten when the agent ends.
   */
  readonly #settled = new Map<
    string,
    { readonly agentId: string; readonly request: ApprovalRequest | undefined }
  >();
  readonly #settledOf = new Map<string, Set<string>>();
  readonly #remembered = new Set<string>();

  constructor(host: ApprovalBookHost) {
    this.#host = host;
  }

  /** Rules approved for the session. */
  get remembered(): readonly string[] {
    return [...this.#remembered];
  }

  /** Requests waiting for a decision, oldest first; of one agent when `agentId` is given. */
  pending(agentId?: string): ApprovalRequest[] {
    return [...this.#pending.values()]
      .filter((entry) => agentId === undefined || entry.ref.agentId === agentId)
      .map((entry) => entry.request);
  }

  /** The agent waits for a decision on `request` (reported each time it waits on it). */
  requested(ref: AgentRef, request: ApprovalRequest): void {
    const { requestId } = request;
    if (this.#pending.has(requestId) || this.#settled.has(requestId)) return;
    if (this.#remembered.has(request.rule)) {
      this.#settle(ref.agentId, request, {
        approved: true,
        remember: 'session',
        by: 'rule',
        decider: `remembered for the session: ${request.rule}`,
      });
      return;
    }
    if (this.#host.unattended === 'deny' && !this.#host.listening(ref.agentId)) {
      this.#settle(ref.agentId, request, {
        approved: false,
        by: 'unattended',
        reason:
          'nobody listens for approvals (no `agent:approval` listener); allow the call with a permissions rule',
      });
      return;
    }
    this.#pending.set(requestId, { ref, request });
    this.#host.emitApproval(extend(ref, { request }));
  }

  /**
   * A decision was journalled by the agent (ApprovalDecided). The event announced carries the
   * request it answers when this book saw it asked (those a remembered rule or the unattended
   * policy settled were never announced as `agent:approval`).
   */
  decided(event: AgentDecision): void {
    const { requestId, decision } = event;
    let request: ApprovalRequest | undefined;
    if (requestId !== undefined) {
      request = this.#pending.get(requestId)?.request ?? this.#settled.get(requestId)?.request;
      this.#pending.delete(requestId);
      this.#markSettled(requestId, event.agentId, request);
    }
    if (decision.approved && decision.remember === 'session') this.#remember(event.rule);
    this.#host.emitDecision(
      request === undefined || event.request !== undefined ? event : extend(event, { request }),
    );
  }

  /**
   * Approves a pending request. Rejects with UserError `approval_not_pending` when no request of
   * that id waits here (it was decided, timed out, or its agent ended).
   */
  async approve(requestId: string, options: ApproveOptions = {}): Promise<void> {
    const entry = this.#take(requestId);
    const remember = options.remember === 'session' && rememberable(entry.request.rule) ? 'session' : 'call';
    const decision: ApprovalDecision = {
      approved: true,
      remember,
      by: options.by ?? 'person',
      decider: options.decider ?? 'program',
    };
    const delivered = this.#host.deliver(entry.ref.agentId, requestId, decision);
    if (remember === 'session') this.#remember(entry.request.rule);
    await delivered;
  }

  /** Denies a pending request; `reason` is part of the tool result the model sees. Rejects like {@link approve}. */
  async deny(requestId: string, reason?: string, options: DenyOptions = {}): Promise<void> {
    const entry = this.#take(requestId);
    await this.#host.deliver(entry.ref.agentId, requestId, {
      approved: false,
      by: options.by ?? 'person',
      decider: options.decider ?? 'program',
      ...(reason === undefined || reason.trim() === '' ? {} : { reason }),
    });
  }

  /** The agent ended: its requests are no longer anyone's to decide. */
  ended(agentId: string): void {
    for (const [requestId, entry] of this.#pending) {
      if (entry.ref.agentId === agentId) this.#pending.delete(requestId);
    }
    for (const requestId of this.#settledOf.get(agentId) ?? []) this.#settled.delete(requestId);
    this.#settledOf.delete(agentId);
  }

  #take(requestId: string): Pending {
    const entry = this.#pending.get(requestId);
    if (!entry) {
      throw new UserError(
        'approval_not_pending',
        `No approval request ${requestId} is waiting: it was decided, timed out, or its agent ended`,
        { requestId },
      );
    }
    this.#pending.delete(requestId);
    this.#markSettled(requestId, entry.ref.agentId, entry.request);
    return entry;
  }

  /** Approves later asks of `rule` and the ones waiting now. */
  #remember(rule: string): void {
    // A rule holding a masked secret would approve the same call with any value (NOT_REMEMBERABLE).
    if (this.#remembered.has(rule) || !rememberable(rule)) return;
    this.#remembered.add(rule);
    for (const [requestId, entry] of this.#pending) {
      if (entry.request.rule !== rule) continue;
      this.#pending.delete(requestId);
      this.#settle(entry.ref.agentId, entry.request, {
        approved: true,
        remember: 'session',
        by: 'rule',
        decider: `remembered for the session: ${rule}`,
      });
    }
  }

  #markSettled(requestId: string, agentId: string, request: ApprovalRequest | undefined): void {
    this.#settled.set(requestId, { agentId, request });
    let ids = this.#settledOf.get(agentId);
    if (!ids) {
      ids = new Set();
      this.#settledOf.set(agentId, ids);
    }
    ids.add(requestId);
  }

  #settle(agentId: string, request: ApprovalRequest, decision: ApprovalDecision): void {
    const { requestId } = request;
    this.#markSettled(requestId, agentId, request);
    this.#host.deliver(agentId, requestId, decision).catch(() => {
      // The engine cannot reach the agent (Redis down, the agent ended): its request times out.
    });
  }
}
