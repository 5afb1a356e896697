/** `results.jsonl`: one line per agent, appended as each one ends. */
import type { SerializedError } from '../errors.ts';
import type { ItemScores } from '../eval/types.ts';
import type { AgentOutcome, FailureReason, InheritedSpend } from '../loop/types.ts';
import type { Usage } from '../providers/types.ts';
import type { ReplayCounts } from '../replay/types.ts';

/** One finished agent. */
export interface ResultLine {
  /** Position of the run in the plan; null for an agent another agent spawned. */
  readonly index: number | null;
  readonly agentId: string;
  readonly parentId: string | null;
  /** Definition name. */
  readonly agent: string;
  /** 1 for the first run of a plan entry, 2 for its rerun by `troupe resume`, and so on. */
  readonly attempt: number;
  readonly status: 'completed' | 'failed';
  /** The `complete_task` result, when the agent delivered one. */
  readonly result?: unknown;
  /** The final answer text (or the JSON of the result). */
  readonly answer?: string;
  readonly reason?: FailureReason;
  readonly error?: SerializedError;
  /**
   * `usage.estimated` when troupe estimated counts a server did not report. The agent's whole
   * history: a retry's includes the requests of the attempt it continues (see `inherited`).
   */
  readonly usage: Usage;
  /** USD; null when the model's price is unknown. */
  readonly costUsd: number | null;
  /**
   * A retry (`troupe resume --retry-failed`): the part of `usage` and `costUsd` the attempt it
   * continues spent, already in that attempt's line. Run totals add `usage` less this.
   */
  readonly inherited?: InheritedSpend;
  readonly rounds: number;
  /** Model requests (absent for agents that never ran the loop, and in older run directories). */
  readonly steps?: number;
  /** The caller's id for the run (`id` in the plan or tasks file). */
  readonly label?: string;
  /** The run's `metadata` from the plan or tasks file (a data set's split, tags), when it has any. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Thread (actor host) the agent last ran on; null when it never started. */
  readonly hostId: number | null;
  readonly restarts: number;
  readonly startedAt: string | null;
  readonly endedAt: string;
  /** `journal` when `troupe resume` took the outcome from the agent's journal (the CLI had died first). */
  readonly recoveredFrom?: 'journal';
  /** Each scorer's verdict on this result, by scorer name (plan entries of a plan with `scorers`). */
  readonly scores?: ItemScores;
  /** A replay's agent: how its tool calls were answered. */
  readonly replay?: ReplayCounts;
}

/** What a result line is built from besides the outcome. */
export interface ResultContext {
  readonly index: number | null;
  readonly parentId: string | undefined;
  readonly agent: string;
  readonly attempt: number;
  readonly label: string | undefined;
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly hostId: number | undefined;
  readonly restarts: number;
  readonly startedAt: string | undefined;
  readonly endedAt: string;
}

/** `{ metadata }` when there is any, else nothing: a line without metadata is as it always was. */
export function metadataMember(metadata: Readonly<Record<string, unknown>> | undefined): {
  metadata?: Readonly<Record<string, unknown>>;
} {
  return metadata === undefined || Object.keys(metadata).length === 0 ? {} : { metadata };
}

/** The line for an agent that ended with `outcome`. */
export function resultLine(outcome: AgentOutcome, context: ResultContext): ResultLine {
  const common = {
    index: context.index,
    agentId: outcome.agentId,
    parentId: context.parentId ?? null,
    agent: context.agent,
    attempt: context.attempt,
    ...(context.label === undefined ? {} : { label: context.label }),
    ...metadataMember(context.metadata),
  };
  const tail = {
    usage: outcome.usage,
    costUsd: outcome.costUsd,
    ...(outcome.inherited === undefined ? {} : { inherited: outcome.inherited }),
    rounds: outcome.rounds,
    ...(outcome.steps === undefined ? {} : { steps: outcome.steps }),
    hostId: context.hostId ?? null,
    restarts: context.restarts,
    startedAt: context.startedAt ?? null,
    endedAt: context.endedAt,
    ...(outcome.replay === undefined ? {} : { replay: outcome.replay }),
  };
  return outcome.status === 'completed'
    ? {
        ...common,
        status: 'completed',
        ...(outcome.result === undefined ? {} : { result: outcome.result }),
        answer: outcome.answer,
        ...tail,
      }
    : { ...common, status: 'failed', reason: outcome.reason, error: outcome.error, ...tail };
}

/** The last line of each plan index (later attempts replace earlier ones). */
export function latestByIndex<T extends Pick<ResultLine, 'index'>>(lines: Iterable<T>): Map<number, T> {
  const latest = new Map<number, T>();
  for (const line of lines) if (line.index !== null) latest.set(line.index, line);
  return latest;
}

/**
 * Failure reasons `troupe resume --retry-failed` leaves alone unless `--reason` names them: a
 * cancelled entry is run again anyway, and an invalid request (a bad option, a tool module that
 * does not load) fails the same way until the run's files change.
 */
export const NOT_RETRIED_BY_DEFAULT: ReadonlySet<FailureReason> = new Set(['cancelled', 'invalid_request']);

/** True when a plan entry whose last line is `line` still needs running. */
export function needsRerun(line: Pick<ResultLine, 'status' | 'reason'> | undefined): boolean {
  return line === undefined || (line.status === 'failed' && line.reason === 'cancelled');
}

/**
 * What an agent delivered, short (its result's `summary`, `answer`, `result`, `text` or `message`
 * when it has one as text), or why it failed, as text. A string that would read as another JSON
 * value (`"112"`, `"true"`) is shown quoted, so it is not mistaken for the number or boolean.
 */
export function outcomeText(line: ResultLine): string {
  if (line.status === 'failed') return failureText(line);
  const result = line.result;
  if (typeof result === 'string') return plainString(result);
  if (typeof result === 'object' && result !== null) {
    for (const key of ['summary', 'answer', 'result', 'text', 'message']) {
      const value = (result as Record<string, unknown>)[key];
      if (typeof value === 'string') return plainString(value);
    }
    return JSON.stringify(result);
  }
  return result === undefined ? (line.answer ?? '') : JSON.stringify(result);
}

/**
 * Everything an agent delivered, as text: its whole result as JSON, else its answer; or why it
 * failed. Two lines deliver the same exactly when these texts are equal.
 */
export function deliveredText(line: ResultLine): string {
  if (line.status === 'failed') return failureText(line);
  return line.result === undefined ? (line.answer ?? '') : JSON.stringify(line.result);
}

/**
 * Characters of a long result's outcome text a report keeps ({@link reportLine}): its rows show
 * the first 100 (LINE_EXCERPT_CHARS) once runs of whitespace are collapsed.
 */
export const REPORT_RESULT_CHARS = 400;

/**
 * `line` as `troupe report` needs it: a completed line whose result or answer is longer than
 * REPORT_RESULT_CHARS characters keeps, as its `result`, the first REPORT_RESULT_CHARS characters
 * of its {@link outcomeText} (a string of its own), and no `answer`; `outcomeText` of it starts as
 * the whole line's does. Every other member is kept. A report of 100,000 2.7 KB lines held them
 * all whole.
 */
export function reportLine(line: ResultLine): ResultLine {
  if (line.status === 'failed') return line;
  const result = line.result === undefined ? 0 : (JSON.stringify(line.result)?.length ?? 0);
  if (result <= REPORT_RESULT_CHARS && (line.answer?.length ?? 0) <= REPORT_RESULT_CHARS) return line;
  const text = outcomeText(line);
  const { answer: _answer, result: _result, ...rest } = line;
  let end = Math.min(text.length, REPORT_RESULT_CHARS);
  const last = text.charCodeAt(end - 1);
  if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { ...rest, result: Buffer.from(text.slice(0, end), 'utf8').toString('utf8') };
}

function failureText(line: ResultLine): string {
  return `${line.reason ?? 'failed'}: ${line.error?.message ?? ''}`.trim();
}

const JSON_SCALAR = /^\s*(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)\s*$/;

function plainString(text: string): string {
  return JSON_SCALAR.test(text) ? JSON.stringify(text) : text;
}
