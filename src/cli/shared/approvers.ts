/**
 * Who answers approval requests on the command line: `--approve` rules first, then, on a terminal,
 * a person pressing `y` (approve), `n` (deny) or `a` (approve, and every later request of the same
 * rule this session); off a terminal, nobody: the request is denied (the closing summary lists it).
 *
 * The terminal is read only while a request waits, in raw mode so one key answers without Enter;
 * other agents keep running meanwhile. Raw mode turns the terminal's signal keys into bytes, so they
 * are acted on here, as the terminal would have: Ctrl-C is passed on as SIGINT; Ctrl-Z leaves raw
 * mode and stops the process (SIGTSTP), and `fg` (SIGCONT) enters raw mode again and shows the
 * request again; Ctrl-\ leaves raw mode and quits (SIGQUIT). Windows has no job control: there the
 * last two are ignored.
 */
import type { AuditEventInput } from '../../journal/events.ts';
import { type ApprovalDecision, type ApprovalRequest, rememberable } from '../../protocol/approvals.ts';
import { LINE_EXCERPT_CHARS } from '../../run-dir/constants.ts';
import { excerpt, printable } from '../../run-dir/format.ts';
import { approvalKeys } from '../../run-dir/render-approvals.ts';
import type { ApprovalAnswer, SessionApprover } from '../../run-dir/session-approvals.ts';
import { DENY_UNATTENDED } from '../../run-dir/session-approvals.ts';
import { terminalAbilities } from '../../run-dir/terminal-style.ts';
import { allowingRule } from '../../tools/permissions.ts';

/** The part of `process.stdin` the terminal approver uses. */
export interface KeyInput {
  readonly isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
  on(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  off(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

/**
 * What the terminal approver does for Ctrl-Z and Ctrl-\, which raw mode hands it as bytes instead
 * of signalling the process. Tests pass stand-ins; undefined (Windows) ignores both keys.
 */
export interface JobControl {
  /** Where SIGCONT (`fg`) comes from. */
  readonly signals: Pick<NodeJS.EventEmitter, 'on' | 'off'>;
  /** Stops the process (Ctrl-Z). */
  readonly suspend: () => void;
  /** Ends the process as Ctrl-\ would (SIGQUIT). */
  readonly quit: () => void;
}

/** The process's job control: SIGTSTP and SIGQUIT to itself; none on Windows. */
export function processJobControl(): JobControl | undefined {
  if (process.platform === 'win32') return undefined;
  return {
    signals: process,
    suspend: () => process.kill(process.pid, 'SIGTSTP'),
    quit: () => process.kill(process.pid, 'SIGQUIT'),
  };
}

/** What the denial of a person's `n` says to the model. */
export const DENIED_AT_TERMINAL = 'denied at the terminal';

/** A person's answer to the request asked first: approve, deny, or approve its rule for the session. */
export type PersonAnswer = 'y' | 'n' | 'a';

/** A request waiting for a person, with where its answer goes. */
interface Waiting {
  readonly request: ApprovalRequest;
  readonly answer: (answer: ApprovalAnswer) => void;
}

/**
 * The requests waiting for a person, oldest first: the head is the one an answer is for, and
 * `announce` shows each request as it becomes the head. Shared by the terminal's keys
 * (`troupe run`) and a chat's typed lines (`troupe chat`).
 */
export class PersonQueue {
  readonly #queue: Waiting[] = [];
  readonly #announce: ((request: ApprovalRequest) => void) | undefined;

  constructor(announce?: (request: ApprovalRequest) => void) {
    this.#announce = announce;
  }

  /** Requests waiting. */
  get length(): number {
    return this.#queue.length;
  }

  /** The request an answer is for now. */
  get head(): ApprovalRequest | undefined {
    return this.#queue[0]?.request;
  }

  push(request: ApprovalRequest, answer: (answer: ApprovalAnswer) => void): void {
    this.#queue.push({ request, answer });
    if (this.#queue.length === 1) this.#announce?.(request);
  }

  forget(requestId: string): void {
    const index = this.#queue.findIndex((entry) => entry.request.requestId === requestId);
    if (index === -1) return;
    this.#queue.splice(index, 1);
    if (index === 0 && this.#queue[0]) this.#announce?.(this.#queue[0].request);
  }

  /** Shows the head again (the terminal was given back to the shell and is back). */
  announceAgain(): void {
    const head = this.#queue[0];
    if (head) this.#announce?.(head.request);
  }

  /** Answers every waiting request with `answer` (the person is gone) and empties the queue. */
  settleAll(answer: ApprovalAnswer): void {
    for (const entry of this.#queue.splice(0)) entry.answer(answer);
  }

  clear(): void {
    this.#queue.length = 0;
  }

  /**
   * Answers the head as the person did; does nothing when nothing waits. `a` on a request whose
   * rule cannot be remembered (it holds a masked secret) approves that call only, as `y` does.
   */
  decide(pressed: PersonAnswer): void {
    const head = this.#queue.shift();
    if (head === undefined) return;
    const key = pressed === 'a' && !rememberable(head.request.rule) ? 'y' : pressed;
    if (key === 'n')
      head.answer({ approved: false, by: 'person', decider: 'tty', reason: DENIED_AT_TERMINAL });
    else
      head.answer({
        approved: true,
        by: 'person',
        decider: 'tty',
        remember: key === 'a' ? 'session' : 'call',
      });
    // `a` approves the rule's other waiting requests too. A supervisor has approved them already
    // (remember: 'session'), so its answer to these is a no-op; `troupe run`'s channel needs it.
    if (key === 'a') {
      const rule = head.request.rule;
      const same = this.#queue.filter((entry) => entry.request.rule === rule);
      this.#queue.splice(
        0,
        this.#queue.length,
        ...this.#queue.filter((entry) => entry.request.rule !== rule),
      );
      for (const entry of same) {
        entry.answer({
          approved: true,
          by: 'rule',
          decider: `remembered for the session: ${rule}`,
          remember: 'session',
        });
      }
    }
    const next = this.#queue[0];
    if (next) this.#announce?.(next.request);
  }
}

/** `y`, `n` or `a` (either case) as a person's answer; undefined for anything else. */
export function personAnswer(text: string): PersonAnswer | undefined {
  const lower = text.toLowerCase();
  return lower === 'y' || lower === 'n' || lower === 'a' ? lower : undefined;
}

/** Asks a person at the terminal, one request at a time, oldest first. */
export class TerminalApprover implements SessionApprover {
  readonly #input: KeyInput;
  readonly #interrupt: () => void;
  readonly #jobs: JobControl | undefined;
  readonly #queue: PersonQueue;
  readonly #onData = (chunk: Buffer | string): void => this.#keys(String(chunk));
  /** After `fg`: raw mode again, and the request shown again (the shell's lines are below it). */
  readonly #continued = (): void => {
    this.#jobs?.signals.off('SIGCONT', this.#continued);
    if (!this.#listening) return;
    this.#input.setRawMode?.(true);
    this.#queue.announceAgain();
  };
  #listening = false;

  /**
   * `interrupt` runs on Ctrl-C while the terminal is read; `announce` (when given) shows each
   * request as it becomes the one the keys answer (the live display shows them itself);
   * `jobControl` stops the process on Ctrl-Z and quits it on Ctrl-\ (default: the process's own).
   */
  constructor(
    input: KeyInput,
    options: {
      interrupt: () => void;
      announce?: (request: ApprovalRequest) => void;
      jobControl?: JobControl | undefined;
    },
  ) {
    this.#input = input;
    this.#interrupt = options.interrupt;
    this.#jobs = 'jobControl' in options ? options.jobControl : processJobControl();
    this.#queue = new PersonQueue(options.announce);
  }

  ask(request: ApprovalRequest, answer: (answer: ApprovalAnswer) => void): void {
    this.#queue.push(request, answer);
    this.#listen();
  }

  forget(requestId: string): void {
    this.#queue.forget(requestId);
    if (this.#queue.length === 0) this.#stop();
  }

  close(): void {
    this.#queue.clear();
    this.#stop();
  }

  #keys(text: string): void {
    for (const key of text) {
      if (key === '\u0003') {
        this.#interrupt();
        continue;
      }
      // The rest of the chunk was typed before the stop or the quit: dropped, as a terminal would.
      if (key === '\u001a' && this.#jobs) {
        this.#suspend(this.#jobs);
        return;
      }
      if (key === '\u001c' && this.#jobs) {
        this.#stop();
        this.#jobs.quit();
        return;
      }
      if (this.#queue.length === 0) return;
      const answer = personAnswer(key);
      if (answer === undefined) continue;
      this.#queue.decide(answer);
      if (this.#queue.length === 0) this.#stop();
    }
  }

  #listen(): void {
    if (this.#listening) return;
    this.#listening = true;
    this.#input.setRawMode?.(true);
    this.#input.on('data', this.#onData);
    this.#input.resume();
  }

  /** Ctrl-Z: the shell gets its terminal back as it lent it (not raw), then the process stops. */
  #suspend(jobs: JobControl): void {
    this.#input.setRawMode?.(false);
    jobs.signals.off('SIGCONT', this.#continued);
    jobs.signals.on('SIGCONT', this.#continued);
    jobs.suspend();
  }

  #stop(): void {
    if (!this.#listening) return;
    this.#listening = false;
    this.#jobs?.signals.off('SIGCONT', this.#continued);
    this.#input.off('data', this.#onData);
    this.#input.setRawMode?.(false);
    this.#input.pause();
  }
}

/** Answers requests a rule of `rules` allows (`--approve`), and passes the rest to `fallback`. */
export class RuleApprover implements SessionApprover {
  readonly #rules: readonly string[];
  readonly #cwd: string;
  readonly #fallback: SessionApprover;

  constructor(rules: readonly string[], cwd: string, fallback: SessionApprover) {
    this.#rules = rules;
    this.#cwd = cwd;
    this.#fallback = fallback;
  }

  ask(request: ApprovalRequest, answer: (answer: ApprovalAnswer) => void): void {
    allowingRule(this.#rules, request.tool, request.toolArgs, { cwd: this.#cwd }).then(
      (rule) => {
        if (rule === undefined) this.#fallback.ask(request, answer);
        else answer({ approved: true, by: 'rule', decider: `--approve ${rule}` });
      },
      () => this.#fallback.ask(request, answer),
    );
  }

  forget(requestId: string): void {
    this.#fallback.forget(requestId);
  }

  close(): void {
    this.#fallback.close();
  }
}

/** `--approve` rules (none: `person` alone) before `person`, or before a denial when nobody can answer. */
export function withApproveRules(
  approve: readonly string[],
  cwd: string,
  person: SessionApprover | undefined,
): SessionApprover {
  const fallback = person ?? DENY_UNATTENDED;
  return approve.length > 0 ? new RuleApprover(approve, cwd, fallback) : fallback;
}

/** The approver of a command: `--approve` rules, then the terminal when there is one, else a denial. */
export function commandApprover(options: {
  readonly approve: readonly string[];
  readonly cwd: string;
  /** Read keys from it when it is a terminal. */
  readonly input: KeyInput | undefined;
  readonly interrupt: () => void;
  readonly announce?: (request: ApprovalRequest) => void;
  /** Ctrl-Z and Ctrl-\ at the terminal. @default {@link processJobControl} */
  readonly jobControl?: JobControl | undefined;
}): SessionApprover {
  const { input } = options;
  const person =
    input?.isTTY === true && typeof input.setRawMode === 'function'
      ? new TerminalApprover(input, {
          interrupt: options.interrupt,
          ...(options.announce ? { announce: options.announce } : {}),
          ...('jobControl' in options ? { jobControl: options.jobControl } : {}),
        })
      : undefined;
  return withApproveRules(options.approve, options.cwd, person);
}

/**
 * The approval channel of an agent run in this process (`troupe run`): requests go to `approver`;
 * a rule approved with `a` is approved without asking for the rest of the run.
 */
export function approvalChannel(
  approver: SessionApprover,
): (request: ApprovalRequest, signal: AbortSignal) => Promise<ApprovalDecision | null> {
  const remembered = new Set<string>();
  return (request, signal) => {
    if (remembered.has(request.rule) && rememberable(request.rule)) {
      return Promise.resolve({
        approved: true,
        remember: 'session',
        by: 'rule',
        decider: `remembered for the session: ${request.rule}`,
      });
    }
    if (signal.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        approver.forget(request.requestId);
        resolve(null);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      approver.ask(request, (answer) => {
        signal.removeEventListener('abort', onAbort);
        if (answer.approved && answer.remember === 'session' && rememberable(request.rule))
          remembered.add(request.rule);
        const { approved, by, decider } = answer;
        resolve(
          answer.approved
            ? { approved, by, decider, ...(answer.remember ? { remember: answer.remember } : {}) }
            : { approved, by, decider, ...(answer.reason ? { reason: answer.reason } : {}) },
        );
      });
    });
  };
}

/**
 * Who answers the agents' approval requests: `--approve` rules, then a person at the terminal (the
 * live display shows what waits and the keys; under `TERM=dumb`, which gets plain lines, the keys
 * are printed with each request), else nobody (denied; the closing summary lists them).
 */
export function sessionApprover(
  approve: readonly string[],
  cwd: string,
  json: boolean,
  /** @default process.stdin when it and stdout are terminals, and process.stdout */
  terminal: { readonly input?: KeyInput; readonly write?: (text: string) => void } = {
    ...(!json && process.stdout.isTTY === true && process.stdin.isTTY === true
      ? { input: process.stdin }
      : {}),
  },
): SessionApprover {
  const write = terminal.write ?? ((text: string) => process.stdout.write(text));
  return commandApprover({
    approve,
    cwd,
    input: terminal.input,
    interrupt: () => process.kill(process.pid, 'SIGINT'),
    ...(terminalAbilities().cursor
      ? {}
      : { announce: (request) => write(`${printable(approvalPrompt(request, 'this session'))}\n`) }),
  });
}

/** What `troupe run` prints when a request becomes the one the keys answer. */
export function approvalPrompt(request: ApprovalRequest, scope = 'this run'): string {
  return `approval needed: ${request.tool} ${excerpt(JSON.stringify(request.args), LINE_EXCERPT_CHARS)} (${request.reason})\n  ${approvalKeys(request.rule, scope)}`;
}

/** `troupe run`'s (and `troupe chat`'s) line for a decision in its journal; undefined for other events. */
export function approvalEventLine(event: AuditEventInput): string | undefined {
  if (event.type !== 'ApprovalDecided') return undefined;
  const who = event.by === 'person' ? 'a person' : event.by;
  return `${event.approved ? 'approved' : 'denied'}: ${event.name} by ${who}${event.decider ? ` (${event.decider})` : ''}${event.reason ? `: ${event.reason}` : ''}`;
}
