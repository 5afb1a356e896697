/**
 * `Supervisor.session`: one agent, one projection, many user turns (the session loop of
 * src/loop/session.ts, run by an engine like any agent). `send(text)` delivers a user message to
 * the agent's inbox and resolves with the agent's answer to it.
 */
import { SystemError, UserError } from '../errors.ts';
import type { AgentOutcome } from '../loop/types.ts';
import type { AgentHandle } from './agent-handle.ts';
import type { AgentTurn } from './events.ts';
import type { SpawnOptions } from './spawn-options.ts';

/** The standing instructions of a session started without a `task`. */
export const DEFAULT_SESSION_TASK =
  "Talk with the user: each of their messages follows as 'User: <text>'. Answer each one; " +
  'use your tools when a message needs them.';

/** Options of {@link Supervisor.session}: a spawn's, with the task optional. */
export interface SessionOptions extends Omit<SpawnOptions, 'task' | 'replay' | 'retryOf'> {
  /** The session's standing instructions (its task). @default DEFAULT_SESSION_TASK */
  readonly task?: string;
}

/** The agent's answer to one user message. */
export interface SessionAnswer {
  /** Which message it answers: 0 for the session's first. */
  readonly turn: number;
  /** The answer text (the JSON of the result when the turn ended with `complete_task`). */
  readonly answer: string;
  /** The `complete_task` result, when the turn ended with one. */
  readonly result?: unknown;
}

interface Waiter {
  readonly resolve: (answer: SessionAnswer) => void;
  readonly reject: (error: Error) => void;
}

/**
 * A conversation with one agent: each `send` is a user message, answered by one turn of the same
 * projection (history, keyed state and budget carry over). Messages sent while a turn runs are
 * queued and answered in order. `cancelTurn()` cancels the turn in flight alone, and the session
 * goes on with the next message. The session is journalled like any agent and survives a thread
 * restart: it resumes from its journal and answers what it had been sent. `close()` ends it
 * Completed with its last answer.
 *
 * @example
 * const chat = supervisor.session('assistant');
 * const { answer } = await chat.send('What does src/a.ts export?');
 * const outcome = await chat.close();
 */
export class AgentSession {
  /** The agent's handle: its events, its id, its outcome. */
  readonly handle: AgentHandle;
  readonly #instruct: (text: string) => Promise<number>;
  readonly #cancelTurn: (turn: number, reason: string) => Promise<void>;
  /**
   * Answers (or a cancelled turn's error) that came before their `send` had its index: kept until
   * claimed.
   */
  readonly #unclaimed = new Map<number, SessionAnswer | SystemError>();
  readonly #waiters = new Map<number, Waiter>();
  /** Messages on their way to the agent: a turn cancel waits for them to know which turn runs. */
  readonly #sending = new Set<Promise<number>>();
  /** The highest turn answered (or cancelled) so far: a repeated one (after a restart) is not kept again. */
  #answered = -1;
  /** The highest message index the agent has. */
  #sent = -1;
  #ended: AgentOutcome | undefined;

  /** @internal */
  constructor(
    handle: AgentHandle,
    instruct: (text: string) => Promise<number>,
    cancelTurn: (turn: number, reason: string) => Promise<void>,
  ) {
    this.handle = handle;
    this.#instruct = instruct;
    this.#cancelTurn = cancelTurn;
    handle.on('turn', (event) => this.#onTurn(event));
    void handle.result.then((outcome) => {
      this.#ended = outcome;
      const error = endedError(outcome);
      for (const waiter of this.#waiters.values()) waiter.reject(error);
      this.#waiters.clear();
    });
  }

  /** The agent id (also its journal's name). */
  get id(): string {
    return this.handle.id;
  }

  /**
   * Sends a user message and resolves with the agent's answer to it. Rejects with UserError
   * `session_ended` when the session ends before answering (a limit, a failure, `close()`) and
   * also when it had already ended before the call (the message is then not sent); a `send` that
   * races the session's end (issued just before `close()` takes effect) may instead reject with
   * `agent_not_running`, from delivering the message to an agent that is no longer running.
   * Rejects with SystemError `turn_cancelled` when its turn was cancelled ({@link cancelTurn}), and
   * with UserError `instruction_too_large` for a message over `MAX_INSTRUCTION_BYTES` (1 MiB of UTF-8).
   */
  async send(text: string): Promise<SessionAnswer> {
    if (this.#ended) throw endedError(this.#ended);
    const sending = this.#instruct(text);
    this.#sending.add(sending);
    let turn: number;
    try {
      turn = await sending;
    } finally {
      this.#sending.delete(sending);
    }
    this.#sent = Math.max(this.#sent, turn);
    const ready = this.#unclaimed.get(turn);
    if (ready) {
      this.#unclaimed.delete(turn);
      if (ready instanceof SystemError) throw ready;
      return ready;
    }
    if (this.#ended) throw endedError(this.#ended);
    return new Promise((resolve, reject) => this.#waiters.set(turn, { resolve, reject }));
  }

  /**
   * Ends the session: while it waits for a message it ends Completed with its last answer; in the
   * middle of a turn that turn is cancelled (Failed, `cancelled`). Resolves with the outcome.
   */
  close(reason = 'session closed'): Promise<AgentOutcome> {
    if (!this.#ended) this.handle.cancel(reason);
    return this.handle.result;
  }

  /**
   * Cancels the turn in flight (the one answering the oldest message not yet answered) and only
   * it: its model request and tools are aborted, its `send()` rejects with SystemError
   * `turn_cancelled`, a note that it was cancelled joins the history, and the session goes on with
   * the next message, its history, keyed states and budget kept (journalled as TurnCancelled). A
   * turn that ends before the cancel reaches it is answered as usual. Resolves once the engine has
   * the cancel; does nothing when no turn is in flight or the session has ended.
   */
  async cancelTurn(reason = 'turn cancelled'): Promise<void> {
    await Promise.allSettled([...this.#sending]);
    const turn = this.#answered + 1;
    if (this.#ended || turn > this.#sent) return;
    await this.#cancelTurn(turn, reason);
  }

  #onTurn(event: AgentTurn): void {
    if (event.turn <= this.#answered) return;
    this.#answered = event.turn;
    if (event.cancelled !== undefined) {
      const error = new SystemError(
        'turn_cancelled',
        `Turn ${event.turn} of session ${event.agentId} was cancelled: ${event.cancelled}`,
        { agentId: event.agentId, turn: event.turn, reason: event.cancelled },
      );
      const waiter = this.#waiters.get(event.turn);
      if (waiter) {
        this.#waiters.delete(event.turn);
        waiter.reject(error);
      } else this.#unclaimed.set(event.turn, error);
      return;
    }
    const answer: SessionAnswer = {
      turn: event.turn,
      answer: event.answer,
      ...(event.result === undefined ? {} : { result: event.result }),
    };
    const waiter = this.#waiters.get(event.turn);
    if (waiter) {
      this.#waiters.delete(event.turn);
      waiter.resolve(answer);
    } else this.#unclaimed.set(event.turn, answer);
  }
}

function endedError(outcome: AgentOutcome): UserError {
  return new UserError(
    'session_ended',
    outcome.status === 'failed'
      ? `The session ${outcome.agentId} ended before answering: ${outcome.reason}: ${outcome.error.message}`
      : `The session ${outcome.agentId} ended before answering`,
    {
      agentId: outcome.agentId,
      status: outcome.status,
      ...(outcome.status === 'failed' ? { reason: outcome.reason } : {}),
    },
  );
}
