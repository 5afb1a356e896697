/**
 * Runs a prepared session in front of a user: a header (which provider, which agent, where the
 * journal is), live progress while the agent runs, then its result. Human output goes to stderr
 * and only the result to stdout, so `troupe run ... > result.txt` keeps just the answer; `--json`
 * prints JSON lines to stdout instead.
 */
import { isAbsolute, relative } from 'node:path';
import { context } from '@opentelemetry/api';
import { formatProblem } from '../../definition/problems.ts';
import { serializeError } from '../../errors.ts';
import type { AuditEvent } from '../../journal/events.ts';
import { redactValue } from '../../journal/redact.ts';
import type { AgentChannels, AgentOutcome } from '../../loop/types.ts';
import { printable, terminalJson } from '../../run-dir/format.ts';
import {
  INTERRUPT_EXIT_CODES,
  type InterruptSignal,
  raise,
  watchInterrupts,
} from '../../run-dir/interrupt.ts';
import { AgentTracing, type TracingOptions } from '../../telemetry/agent-tracing.ts';
import { contextFromTraceparent } from '../../telemetry/trace-context.ts';
import { traceEventOf } from '../../telemetry/trace-events.ts';
import type { ToolTraceContext } from '../../tools/types.ts';
import {
  approvalChannel,
  approvalEventLine,
  approvalPrompt,
  commandApprover,
  type KeyInput,
} from './approvers.ts';
import { EXIT_FAILED, EXIT_OK } from './constants.ts';
import type { CliIO } from './io.ts';
import { outcomeSummary, ProgressFormatter, resultText } from './progress.ts';
import type { PreparedSession, SessionInfo } from './session.ts';

/** Options of {@link executeLive}. */
export interface LiveOptions {
  /** Print JSON lines (a `Run` header, every audit event as journalled, an `Outcome`) instead of text. */
  readonly json: boolean;
  /** Ends the process on a second Ctrl-C. @default re-raising the signal with no listener left */
  readonly forceExit?: (signal: InterruptSignal) => void;
  /** `--approve` rules: requests they allow are approved without asking. @default none */
  readonly approve?: readonly string[];
  /** Where a person answers requests. @default process.stdin when it and stderr are terminals (not with `json`) */
  readonly input?: KeyInput;
  /** Trace the agent to the registered OpenTelemetry SDK (`--otlp`). @default not traced */
  readonly tracing?: TracingOptions;
}

/**
 * Runs `session` with live output and resolves to the exit code: 0 when the agent completed, 1 when
 * it failed, and 130 (143 after SIGTERM, 129 after SIGHUP) when the user's Ctrl-C cancelled it.
 */
export async function executeLive(
  session: PreparedSession,
  io: CliIO,
  options: LiveOptions,
): Promise<number> {
  const { info } = session;
  const forceExit = options.forceExit ?? raise;
  if (options.json) io.stdout(`${terminalJson(runLine(info))}\n`);
  else io.stderr(headerText(info));

  const controller = new AbortController();
  let interruptedBy: InterruptSignal | undefined;
  const stopWatching = watchInterrupts(
    (signal) => {
      interruptedBy = signal;
      io.stderr('interrupted: cancelling the agent (press Ctrl-C again to exit at once)\n');
      controller.abort(new Error('interrupted by the user'));
    },
    (signal) => {
      io.stderr(
        `interrupted again: exiting now; continue with \`troupe resume ${displayPath(info.journal)}\`\n`,
      );
      forceExit(signal);
    },
  );
  const progress = new ProgressFormatter(info.resume?.budget ?? {});
  // Nobody reads stdout any more: cancel the agent quietly; the journal keeps every event.
  const closed = io.stdoutClosed;
  const onClosed = (): void => controller.abort(new Error('stdout was closed'));
  if (closed?.aborted) onClosed();
  else closed?.addEventListener('abort', onClosed, { once: true });
  const terminal = !options.json && process.stdin.isTTY === true && process.stderr.isTTY === true;
  const input = options.input ?? (terminal ? process.stdin : undefined);
  const approver = commandApprover({
    approve: options.approve ?? [],
    cwd: info.cwd,
    input,
    interrupt: () => process.kill(process.pid, 'SIGINT'),
    announce: (request) => io.stderr(`${printable(approvalPrompt(request))}\n`),
  });
  const tracing = options.tracing === undefined ? undefined : new AgentTracing(options.tracing);
  const capture = options.tracing?.captureContent === true;
  tracing?.spawned({
    agentId: info.agentId,
    parentId: undefined,
    depth: 0,
    agent: info.agent,
    model: info.model,
    provider: info.provider,
  });
  let outcome: AgentOutcome;
  try {
    outcome = await session.execute({
      signal: controller.signal,
      requestApproval: approvalChannel(approver),
      ...(tracing ? { channels: { inToolSpan: toolSpanChannel(tracing, info.agentId) } } : {}),
      onEvent: (event: AuditEvent) => {
        const traced = tracing && traceEventOf(event, capture);
        if (traced) tracing?.event(info.agentId, Date.parse(event.ts), traced);
        if (options.json) {
          io.stdout(`${terminalJson(event)}\n`);
          return;
        }
        // Tool names, error messages and warnings in events can come from a model or a file.
        for (const line of progress.lines(event)) io.stderr(`${printable(line)}\n`);
        const decided = approvalEventLine(event);
        if (decided !== undefined) io.stderr(`${printable(decided)}\n`);
      },
    });
  } catch (error) {
    // The journal could not be written (disk full), or the session broke: the agent's span still
    // ends, failed with the reason, so the trace is exported rather than lost with it.
    const { code, message } = serializeError(error);
    tracing?.ended(info.agentId, {
      status: 'failed',
      reason: 'crashed',
      error: { code, message },
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: null,
      rounds: 0,
    });
    throw error;
  } finally {
    approver.close();
    stopWatching();
    closed?.removeEventListener('abort', onClosed);
  }
  tracing?.ended(info.agentId, outcome);

  if (options.json) {
    // Masked as a value first: the answer is JSON text, and once inside this line its PEM key's
    // line breaks and quoted pairs are escaped twice, which masking the printed line misses.
    io.stdout(`${terminalJson(redactValue(outcomeLine(info, outcome)))}\n`);
  } else {
    io.stderr(`${outcomeSummary(outcome)}\n`);
    if (outcome.status === 'completed') io.stdout(`${resultText(outcome)}\n`);
  }
  if (outcome.status === 'completed') return EXIT_OK;
  // Cancelled by the user's signal, as `troupe fanout` reports it: a script can tell an interrupt
  // from a failure. An agent that failed for another reason before the cancel took hold exits 1.
  return interruptedBy !== undefined && outcome.reason === 'cancelled'
    ? INTERRUPT_EXIT_CODES[interruptedBy]
    : EXIT_FAILED;
}

/**
 * Runs each tool call of the traced agent in its `execute_tool` span's context, and gives it the
 * span's W3C trace context (`ctx.traceContext`: an MCP call sends it on), as a supervisor does.
 */
function toolSpanChannel(tracing: AgentTracing, agentId: string): AgentChannels['inToolSpan'] {
  return (name, callId, run) => {
    const span = tracing.toolSpan(agentId, name, callId);
    if (span === undefined) return run();
    const traceContext = (): Promise<ToolTraceContext> => Promise.resolve(span);
    return context.with(contextFromTraceparent(span.traceparent), () => run(traceContext));
  };
}

/** `path` relative to the current directory when it is inside it, otherwise as given. */
export function displayPath(path: string): string {
  const inside = relative(process.cwd(), path);
  return inside === '' || inside.startsWith('..') || isAbsolute(inside) ? path : inside;
}

function headerText(info: SessionInfo): string {
  const lines = [info.providerNotice];
  const where = info.definitionPath === undefined ? '' : ` (${displayPath(info.definitionPath)})`;
  lines.push(`agent: ${info.agent}${where} · model: ${info.model} · id: ${info.agentId}`);
  const settings = Object.entries(info.modelSettings ?? {});
  if (settings.length > 0) {
    lines.push(
      `model settings: ${settings.map(([key, value]) => `${key}=${JSON.stringify(value)}`).join(', ')}`,
    );
  }
  if (info.blocks !== undefined && info.blocks.length > 0) {
    lines.push(
      `blocks: ${info.blocks.map((block) => `${block.id}@${block.version} (${block.range})`).join(', ')}`,
    );
  }
  for (const problem of info.definitionWarnings ?? []) {
    lines.push(printable(formatProblem(problem, displayPath(problem.file))));
  }
  if (info.resume === undefined) {
    lines.push(`journal: ${displayPath(info.journal)}`);
  } else {
    lines.push(...resumeLines(info));
  }
  return `${lines.join('\n')}\n`;
}

/**
 * What a resumed session's header says about the journal it continues: how many events, a torn
 * last line cut, an agent already ended, a definition missing or changed. None when not resuming.
 */
export function resumeLines(info: SessionInfo): string[] {
  const resume = info.resume;
  if (resume === undefined) return [];
  const torn =
    resume.truncatedBytes > 0
      ? `; cut a torn last line of ${resume.truncatedBytes} bytes left by a crash`
      : '';
  const lines = [`resuming from ${displayPath(info.journal)}: ${resume.events} events${torn}`];
  if (resume.ended) lines.push('the agent had already ended: nothing is run again');
  if (resume.definitionMissing) {
    lines.push(
      `note: no definition of \`${info.agent}\` is found from ${displayPath(info.cwd)} any more; the agent continues with the definition recorded in its journal`,
    );
  }
  if (resume.definitionChanged) {
    lines.push(
      `note: the definition of \`${info.agent}\`${info.definitionPath === undefined ? '' : ` (${displayPath(info.definitionPath)})`} changed since the run started; the agent continues with the definition recorded in its journal, not the file`,
    );
  }
  return lines;
}

function runLine(info: SessionInfo) {
  return {
    type: 'Run',
    command: info.command,
    agentId: info.agentId,
    agent: info.agent,
    definitionPath: info.definitionPath ?? null,
    provider: info.provider,
    simulated: info.simulated,
    notice: info.providerNotice,
    model: info.model,
    journal: info.journal,
    cwd: info.cwd,
    modelSettings: info.modelSettings ?? {},
    blocks: info.blocks ?? [],
    // As the Started event's warnings: where each is written, no severity (all are warnings).
    warnings: (info.definitionWarnings ?? []).map(({ code, message, file, line, column, path }) => ({
      code,
      message,
      file,
      line,
      column,
      path,
    })),
    ...(info.resume ? { resume: info.resume } : {}),
  };
}

function outcomeLine(info: SessionInfo, outcome: AgentOutcome) {
  return {
    type: 'Outcome',
    ...outcome,
    journal: info.journal,
    provider: info.provider,
    simulated: info.simulated,
  };
}
