/**
 * An agent's instruction inbox on the main thread (thread engine): an append-only log. The agent asks for
 * instruction number `n` (how many it has already journaled), so a wait repeated after a thread
 * crash gets the same instruction again and none is lost or delivered twice. Instructions sent
 * before the agent waits are simply already in the log. A parked wait costs one callback and, when
 * the wait has a limit, one timer.
 *
 * Bounded: instructions the agent has not yet asked for are at most `maxPending` (a send past it
 * throws UserError `instruction_queue_full`), and instructions it has asked for are dropped (its
 * journal holds them; a wait after a crash asks for the next one, never an earlier one).
 */
import { UserError, withoutStack } from '../../errors.ts';
import type { ApprovalDecision } from '../../protocol/approvals.ts';
import { DEFAULT_MAX_PENDING_INSTRUCTIONS } from '../actor/limits.ts';

/** Receives the answer to one wait: the instruction, or null (timeout, abandoned). */
export type Deliver = (text: string | null) => void;

/** Receives the decision on one approval request, or null (the wait was abandoned). */
export type DeliverDecision = (decision: ApprovalDecision | null) => void;

interface PendingWait {
  readonly index: number;
  readonly deliver: Deliver;
  readonly timer: NodeJS.Timeout | undefined;
}

export class Mailbox {
  /** Instructions from number `#first` on; the ones before it were asked for and are dropped. */
  #log: string[] = [];
  #first = 0;
  /** Instructions asked for: one more than the highest number a wait asked for. */
  #asked = 0;
  #waiting: PendingWait | undefined;
  /**
   * Decisions on the agent's approval requests, by request id: kept until the agent ends, so a
   * wait repeated after a thread crash gets the decision that arrived meanwhile. At most one per
   * request the agent made (each needs a tool call, itself bounded by maxSteps).
   */
  readonly #decisions = new Map<string, ApprovalDecision>();
  #deciding: { readonly requestId: string; readonly deliver: DeliverDecision } | undefined;
  readonly #maxPending: number;
  readonly #agentId: string | undefined;

  constructor(maxPending = DEFAULT_MAX_PENDING_INSTRUCTIONS, agentId?: string) {
    this.#maxPending = maxPending;
    this.#agentId = agentId;
  }

  /** Instructions sent so far. */
  get size(): number {
    return this.#first + this.#log.length;
  }

  /** Instructions kept in memory (sent and not yet asked for, plus a few already asked for). */
  get kept(): number {
    return this.#log.length;
  }

  get isWaiting(): boolean {
    return this.#waiting !== undefined;
  }

  /**
   * Appends an instruction and wakes, synchronously, the parked wait that asked for it. Returns the
   * instruction's index. With `at`, the instruction is number `at`: when the log already holds
   * that many, nothing is added (an idempotent re-delivery) and `at` is returned. Throws UserError
   * `instruction_queue_full` when `maxPending` instructions are unread (re-deliveries with `at`
   * re-send what an agent's journal or recording holds, so they are exempt).
   */
  send(text: string, at?: number): number {
    // A re-delivery of what the log already holds; it is not a new instruction, so not bounded.
    if (at !== undefined && at < this.size) return at;
    const pending = Math.max(0, this.size - this.#asked);
    if (at === undefined && pending >= this.#maxPending) {
      // No stack: a sender past the bound may send thousands more, each refused.
      throw withoutStack(
        () =>
          new UserError(
            'instruction_queue_full',
            `The agent has ${pending} instructions it has not asked for yet (limit ${this.#maxPending}); this one was not sent`,
            { agentId: this.#agentId, pending, limit: this.#maxPending },
          ),
      );
    }
    const index = this.#first + this.#log.push(text) - 1;
    const waiting = this.#waiting;
    if (waiting && waiting.index < this.size) {
      this.#waiting = undefined;
      if (waiting.timer) clearTimeout(waiting.timer);
      waiting.deliver(this.#at(waiting.index) ?? null);
    }
    return index;
  }

  #at(index: number): string | undefined {
    return this.#log[index - this.#first];
  }

  /**
   * Instruction `index` was asked for: the agent has journaled every one before it, and `index`
   * itself no longer counts as unread. The ones before it are dropped once they are many
   * (amortised: one copy per half); `index` is kept for a wait repeated after a crash.
   */
  #release(index: number): void {
    if (index + 1 <= this.#asked) return;
    this.#asked = index + 1;
    const done = index - this.#first;
    if (done >= 64 && done * 2 >= this.#log.length) {
      this.#log = this.#log.slice(done);
      this.#first = index;
    }
  }

  /**
   * Calls `deliver` with instruction number `index` (0-based): at once when it was sent already,
   * else when it is sent, or with null after `timeoutMs` (undefined = no limit). A new wait ends
   * an older parked one with null.
   */
  park(index: number, timeoutMs: number | undefined, deliver: Deliver): void {
    this.#release(index);
    const ready = this.#at(index);
    if (ready !== undefined) {
      deliver(ready);
      return;
    }
    this.abandon();
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            if (this.#waiting?.deliver === deliver) this.#waiting = undefined;
            deliver(null);
          }, timeoutMs);
    this.#waiting = { index, deliver, timer };
  }

  /** {@link park} as a promise. */
  wait(index: number, timeoutMs: number | undefined): Promise<string | null> {
    return new Promise((resolve) => this.park(index, timeoutMs, resolve));
  }

  /**
   * Drops the parked wait if it is the one `deliver` answers, without answering it: its asker gave
   * up and has its answer already (a host that cancelled its wait, or died).
   */
  withdraw(deliver: Deliver): void {
    const waiting = this.#waiting;
    if (waiting?.deliver !== deliver) return;
    this.#waiting = undefined;
    if (waiting.timer) clearTimeout(waiting.timer);
  }

  /** Ends a parked wait (an instruction's or a decision's) with null (cancel, host death, close). */
  abandon(): void {
    const deciding = this.#deciding;
    this.#deciding = undefined;
    deciding?.deliver(null);
    const waiting = this.#waiting;
    if (!waiting) return;
    this.#waiting = undefined;
    if (waiting.timer) clearTimeout(waiting.timer);
    waiting.deliver(null);
  }

  /**
   * Records the decision on `requestId` and wakes the wait parked for it. The first decision wins:
   * false when the request was decided already.
   */
  decide(requestId: string, decision: ApprovalDecision): boolean {
    if (this.#decisions.has(requestId)) return false;
    this.#decisions.set(requestId, decision);
    const deciding = this.#deciding;
    if (deciding?.requestId === requestId) {
      this.#deciding = undefined;
      deciding.deliver(decision);
    }
    return true;
  }

  /** Whether `requestId` was decided. */
  decided(requestId: string): boolean {
    return this.#decisions.has(requestId);
  }

  /**
   * Calls `deliver` with the decision on `requestId`: at once when it was decided already, else
   * when it is. A new decision wait ends an older parked one with null (an agent asks one at a time).
   */
  awaitDecision(requestId: string, deliver: DeliverDecision): void {
    const ready = this.#decisions.get(requestId);
    if (ready !== undefined) {
      deliver(ready);
      return;
    }
    const older = this.#deciding;
    this.#deciding = { requestId, deliver };
    older?.deliver(null);
  }

  /** Drops the parked decision wait `deliver` answers, without answering it (its asker gave up). */
  withdrawDecision(deliver: DeliverDecision): void {
    if (this.#deciding?.deliver === deliver) this.#deciding = undefined;
  }
}
