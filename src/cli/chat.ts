/**
 * `troupe chat AGENT`: an interactive session with one agent in this process. Each line typed is a
 * user message; the agent answers it with one turn of the same projection (history, keyed state
 * and budget carry over: src/loop/session.ts), and the whole conversation is journalled, so
 * `troupe chat --resume JOURNAL` continues it. Ctrl-D, `/exit` or Ctrl-C at the prompt ends the
 * chat; Ctrl-C in the middle of a turn cancels that turn (its request and tools are aborted, the
 * history notes it) and the prompt comes back; a second Ctrl-C before the turn has stopped ends
 * the chat Failed(cancelled), for good.
 *
 * Approvals are answered as `troupe run` answers them: `--approve` rules first, then, at a terminal,
 * the person, whose next typed line (`y`, `n` or `a`) answers the request; off a terminal the
 * request is denied. Every decision is shown.
 */
import { resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import type { Command } from 'commander';
import { formatProblem } from '../definition/problems.ts';
import { UserError } from '../errors.ts';
import type { AuditEventInput } from '../journal/events.ts';
import { readJournal } from '../journal/reader.ts';
import type { AgentChannels } from '../loop/types.ts';
import { type ApprovalRequest, rememberable } from '../protocol/approvals.ts';
import { parseModelMap } from '../providers/models.ts';
import { EXIT_INTERRUPTED } from '../run-dir/constants.ts';
import { printable } from '../run-dir/format.ts';
import type { ApprovalAnswer, SessionApprover } from '../run-dir/session-approvals.ts';
import { DEFAULT_SESSION_TASK } from '../supervisor/session.ts';
import { COMMAND_HELP } from './commands.ts';
import {
  approvalChannel,
  approvalEventLine,
  approvalPrompt,
  PersonQueue,
  personAnswer,
  withApproveRules,
} from './shared/approvers.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import type { CliIO } from './shared/io.ts';
import { type LatencyFlags, latencyOption } from './shared/latency-flag.ts';
import { displayPath, resumeLines } from './shared/live.ts';
import {
  agentPermissions,
  type CommandPermissions,
  commandPermissions,
  type PermissionFlags,
  permissionOptions,
  reportPermissionWarnings,
} from './shared/permission-flags.ts';
import { startedWarningLine } from './shared/progress.ts';
import {
  type ProviderTimeoutFlags,
  providerTimeoutOptions,
  providerTimeouts,
  reportUnappliedTimeouts,
} from './shared/provider-timeouts.ts';
import { type PreparedSession, prepareResume, prepareRun } from './shared/session.ts';

interface ChatFlags extends PermissionFlags, ProviderTimeoutFlags, LatencyFlags {
  readonly task?: string;
  readonly provider?: string;
  readonly model?: string;
  readonly modelMap?: string[];
  readonly journal?: string;
  readonly cwd?: string;
  readonly resume?: string;
}

/** What the user types to end the chat (besides Ctrl-D and Ctrl-C). */
export const CHAT_EXIT = '/exit';

/** What the chat prints when Ctrl-C cancelled the turn in flight. */
export const TURN_CANCELLED_LINE =
  '(turn cancelled: Ctrl-C; type the next message, or Ctrl-C again to end the chat)';

/** The prompt shown when the agent waits for the next message. */
export const CHAT_PROMPT = 'you> ';

/** Shown at a terminal as each request goes to the model. */
export const WAITING_LINE = '… waiting for the model';

/** The prompt shown while a tool call waits for the person's decision. */
export const APPROVAL_PROMPT = 'approve? [y/n/a] ';
/** The prompt for a request whose rule holds a masked secret: it cannot be approved for the session. */
export const CALL_APPROVAL_PROMPT = 'approve? [y/n] ';

/** Registers `troupe chat` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const command = program
    .command('chat')
    .description(COMMAND_HELP.chat.description)
    .argument('[agent]', 'agent name (see `troupe agents list`); not with --resume')
    .option('--task <text>', 'standing instructions for the whole chat (default: answer each message)')
    .option(
      '--provider <name>',
      'simulated, openai or anthropic (default: openai or anthropic when its API key is set, else simulated)',
    )
    .option('--model <model>', "model name (default: the definition's model, else the provider's default)")
    .option(
      '--model-map <alias=model...>',
      'model aliases added or overridden, e.g. sonnet=claude-sonnet-4-5',
    )
    .option('--journal <file>', 'journal file (default: <cwd>/.troupe/runs/<timestamp>-<agent>-<id>.jsonl)')
    .option(
      '--cwd <dir>',
      'working directory: agents are found from it, file tools are confined to it',
      existingDirectory,
    )
    .option('--resume <journal>', 'continue the chat that journal holds');
  permissionOptions(latencyOption(providerTimeoutOptions(command))).action(
    async (agent: string | undefined, flags: ChatFlags) => {
      setExit(await chat(agent, flags, io, { input: process.stdin, output: process.stdout }));
    },
  );
}

/** The terminal a chat reads from and writes its prompt to. */
export interface ChatTerminal {
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
}

/**
 * Runs `troupe chat` and resolves to its exit code: 0 when the chat ended normally (Ctrl-D,
 * `/exit`, Ctrl-C at the prompt), 1 when the agent failed, 130 when a second Ctrl-C while a
 * cancelled turn was stopping ended it (Failed(cancelled), as `troupe run` exits after Ctrl-C).
 */
export async function chat(
  agent: string | undefined,
  flags: ChatFlags,
  io: CliIO,
  terminal: ChatTerminal,
): Promise<number> {
  const asked = commandPermissions(
    flags,
    flags.resume === undefined ? resolve(flags.cwd ?? process.cwd()) : undefined,
  );
  reportPermissionWarnings(asked, io);
  const prepared = await prepare(agent, flags, asked);
  const { info } = prepared;
  if (info.resume?.ended) {
    prepared.close();
    io.stderr(
      `troupe: this chat has ended (${info.journal}); start a new one with \`troupe chat ${info.agent}\`\n`,
    );
    return 1;
  }
  if (info.createdDirectory !== undefined)
    io.stderr(`troupe: created directory ${info.createdDirectory} for the journal\n`);
  io.stdout(`${info.providerNotice}\n`);
  if (info.simulated) reportUnappliedTimeouts(io, flags, info.provider, 'simulated');
  // What `troupe resume` says of the journal: a torn line cut, a definition missing or changed.
  for (const line of resumeLines(info)) io.stdout(`${line}\n`);
  // The definition file's own warnings (read leniently, unknown keys), as `troupe run` prints them.
  for (const problem of info.definitionWarnings ?? []) {
    io.stderr(`${printable(formatProblem(problem, displayPath(problem.file)))}\n`);
  }
  io.stdout(
    `chat with ${info.agent} (model ${info.model}); journal: ${info.journal}\n` +
      `Type a message and press Enter. Ctrl-D or ${CHAT_EXIT} ends the chat.\n`,
  );

  const isTTY = (terminal.input as { isTTY?: boolean }).isTTY === true;
  const lines = createInterface({
    input: terminal.input,
    output: terminal.output,
    terminal: isTTY,
    prompt: CHAT_PROMPT,
  });
  const controller = new AbortController();
  // At a terminal the person answers requests by typing; off it nobody can (as `troupe run`).
  const person = isTTY ? new LineApprover(lines, io) : undefined;
  const approver = withApproveRules(asked.approve, info.cwd, person);
  const inbox = new Inbox(lines, controller, person);
  let outcome: Awaited<ReturnType<PreparedSession['execute']>>;
  try {
    outcome = await prepared.execute({
      signal: controller.signal,
      channels: inbox.channels,
      requestApproval: approvalChannel(approver),
      onAgentEvent: (event) => show(event, io, info.agent, isTTY),
    });
  } finally {
    approver.close();
  }
  lines.close();
  // The prompt the chat was waiting at is left on its line.
  if (isTTY) io.stdout('\n');
  if (outcome.status === 'failed' && outcome.reason === 'cancelled' && inbox.interrupted) {
    // A second Ctrl-C while the cancelled turn was still stopping cancels the agent itself: it
    // ended Failed(cancelled), and an ended chat cannot be continued.
    io.stderr(
      `troupe: Ctrl-C ended the chat in the middle of a turn (Failed: cancelled); ` +
        `it cannot be continued: start a new chat with \`troupe chat ${info.agent}\` (journal: ${info.journal})\n`,
    );
    return EXIT_INTERRUPTED;
  }
  if (outcome.status === 'failed') {
    io.stderr(`troupe: the chat ended: ${outcome.reason}: ${printable(outcome.error.message)}\n`);
    return 1;
  }
  // The agent ended Completed: its journal is closed, so `troupe chat --resume` refuses it.
  io.stdout(
    `chat ended; its journal: ${info.journal} (start a new chat with \`troupe chat ${info.agent}\`)\n`,
  );
  return 0;
}

async function prepare(
  agent: string | undefined,
  flags: ChatFlags,
  asked: CommandPermissions,
): Promise<PreparedSession> {
  if (flags.resume !== undefined) {
    if (agent !== undefined)
      throw new UserError('invalid_option', 'Expected an agent or --resume JOURNAL, not both', { agent });
    const journal = resolve(flags.resume);
    const events = readJournal(journal).events;
    const started = events.find((event) => event.type === 'Started');
    if (started?.type === 'Started' && started.session !== true) {
      if (events.some((event) => event.type === 'Completed' || event.type === 'Failed')) {
        throw new UserError(
          'invalid_option',
          `Expected the journal of a chat, but ${journal} holds a task run that has already ended: there is nothing to continue`,
          { path: journal },
        );
      }
      throw new UserError(
        'invalid_option',
        `Expected the journal of a chat, but ${journal} holds a task run; continue it with \`troupe resume\``,
        { path: journal },
      );
    }
    return prepareResume({
      journal,
      session: true,
      permissions: agentPermissions(asked),
      providerTimeouts: providerTimeouts(flags),
      ...(flags.latencyMs === undefined ? {} : { simulatedLatencyMs: flags.latencyMs }),
      ...(flags.cwd === undefined ? {} : { cwd: resolve(flags.cwd) }),
    });
  }
  if (agent === undefined)
    throw new UserError('invalid_option', 'Expected an agent to chat with (or --resume JOURNAL)', {});
  return prepareRun({
    agent,
    task: flags.task ?? DEFAULT_SESSION_TASK,
    cwd: resolve(flags.cwd ?? process.cwd()),
    session: true,
    ...(flags.provider === undefined ? {} : { provider: flags.provider }),
    ...(flags.model === undefined ? {} : { model: flags.model }),
    ...(flags.modelMap === undefined ? {} : { modelMap: parseModelMap(flags.modelMap, '--model-map') }),
    ...(flags.journal === undefined ? {} : { journal: resolve(flags.journal) }),
    permissions: agentPermissions(asked),
    providerTimeouts: providerTimeouts(flags),
    ...(flags.latencyMs === undefined ? {} : { simulatedLatencyMs: flags.latencyMs }),
  });
}

/**
 * What the user sees of the agent's work: at a terminal each request to the model, each tool it
 * calls, each approval decision (a denial is never silent), and its answer to each message.
 */
function show(event: AuditEventInput, io: CliIO, agent: string, tty: boolean): void {
  // What `troupe run` prints with its header: `tools` entries that name no tool, a mistyped model.
  if (event.type === 'Started') {
    for (const warning of event.warnings ?? []) io.stderr(`${printable(startedWarningLine(warning))}\n`);
  }
  // At a terminal, a line as each request goes out: a model that stalls is not silent.
  if (event.type === 'InferenceSubmitted' && tty) io.stdout(`  ${WAITING_LINE}\n`);
  // The tool name is the model's own when it names no tool: as untrusted as its answer.
  if (event.type === 'ToolCall') io.stdout(`  · ${printable(event.name)}\n`);
  else if (event.type === 'TurnAnswered') io.stdout(`${agent}> ${printable(event.answer)}\n`);
  else if (event.type === 'TurnCancelled') io.stdout(`  ${TURN_CANCELLED_LINE}\n`);
  const decided = approvalEventLine(event);
  if (decided !== undefined) io.stdout(`  ${printable(decided)}\n`);
}

/**
 * The person at the terminal, asked by readline (which owns the input, so keys cannot be read
 * raw as `troupe run` reads them): the request is shown as `troupe run` shows it, and the next
 * line typed answers it, `y`, `n` or `a`; any other line asks again. Requests wait in order.
 */
class LineApprover implements SessionApprover {
  readonly #lines: Interface;
  readonly #queue: PersonQueue;

  constructor(lines: Interface, io: CliIO) {
    this.#lines = lines;
    this.#queue = new PersonQueue((request) => {
      io.stdout(`${printable(approvalPrompt(request))}\n`);
      this.#ask();
    });
  }

  /** A request waits: the next line typed is its answer, not a message. */
  get waiting(): boolean {
    return this.#queue.length > 0;
  }

  ask(request: ApprovalRequest, answer: (answer: ApprovalAnswer) => void): void {
    this.#queue.push(request, answer);
  }

  forget(requestId: string): void {
    this.#queue.forget(requestId);
    this.#done();
  }

  close(): void {
    this.#queue.clear();
    this.#done();
  }

  /** A line typed while a request waits. */
  answerLine(line: string): void {
    const answer = personAnswer(line.trim());
    if (answer === undefined) {
      this.#ask();
      return;
    }
    this.#queue.decide(answer);
    this.#done();
  }

  /** The input ended (Ctrl-D, `/exit`): nobody is left to answer what waits. */
  inputEnded(): void {
    this.#queue.settleAll({
      approved: false,
      by: 'person',
      decider: 'tty',
      reason: 'the chat ended before the request was answered',
    });
    this.#done();
  }

  #ask(): void {
    const head = this.#queue.head;
    this.#lines.setPrompt(
      head === undefined || rememberable(head.rule) ? APPROVAL_PROMPT : CALL_APPROVAL_PROMPT,
    );
    this.#lines.prompt();
  }

  #done(): void {
    if (this.#queue.length === 0) this.#lines.setPrompt(CHAT_PROMPT);
  }
}

/**
 * The typed lines, as the session's user messages: message n is the n-th non-empty line. The
 * prompt is shown when the agent waits for a message it does not have yet. The end of input
 * (Ctrl-D, or a pipe's end) and `/exit` end the chat once the lines before them are answered.
 * Ctrl-C at the prompt ends it at once (Completed); in the middle of a turn it cancels that turn
 * (through the session's `turnSignal`), and pressed again before the turn has stopped it ends the
 * chat (Failed(cancelled)).
 */
class Inbox {
  /** Lines typed and not yet asked for (a resumed chat asks from the index it had reached). */
  readonly #typed: string[] = [];
  #waiter: ((text: string | null) => void) | undefined;
  #closed = false;
  /** The turn running now (from its `turnSignal` to the next wait for a message). */
  #turn: AbortController | undefined;
  /** Ctrl-C ended the chat. */
  interrupted = false;

  constructor(
    readonly lines: Interface,
    readonly controller: AbortController,
    readonly person: LineApprover | undefined,
  ) {
    lines.on('line', (line) => {
      // Lines after `/exit` (in the same paste or pipe) are not messages.
      if (this.#closed) return;
      const text = line.trim();
      if (text === CHAT_EXIT) {
        this.#closed = true;
        lines.close();
        return;
      }
      // While a call waits for the person, what they type answers it.
      if (person?.waiting) {
        person.answerLine(text);
        return;
      }
      if (text === '') {
        if (this.#waiter) lines.prompt();
        return;
      }
      const waiter = this.#waiter;
      this.#waiter = undefined;
      if (waiter) waiter(text);
      else this.#typed.push(text);
    });
    // Ctrl-C cancels the turn in flight, or ends the chat at the prompt (or when the cancelled turn
    // has not stopped yet). The end of input does not: on a pipe it comes right after the last
    // line, before any of them is answered, and those lines are still to be answered.
    lines.on('SIGINT', () => {
      const turn = this.#turn;
      if (turn !== undefined && !turn.signal.aborted) {
        turn.abort(new Error('interrupted by the user (Ctrl-C)'));
        return;
      }
      this.interrupted = true;
      controller.abort(new Error('interrupted by the user (Ctrl-C)'));
      lines.close();
    });
    lines.on('close', () => {
      this.#closed = true;
      person?.inputEnded();
      this.#waiter?.(null);
      this.#waiter = undefined;
    });
  }

  readonly channels: AgentChannels = {
    turnSignal: () => {
      this.#turn = new AbortController();
      return this.#turn.signal;
    },
    waitForInstruction: (_index, _timeoutMs, signal) => {
      this.#turn = undefined;
      const ready = this.#typed.shift();
      if (ready !== undefined) return Promise.resolve(ready);
      if (this.#closed || signal.aborted) return Promise.resolve(null);
      this.lines.prompt();
      return new Promise((resolveText) => {
        this.#waiter = resolveText;
      });
    },
  };
}
