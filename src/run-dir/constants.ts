/** Defaults of `troupe fanout`, its run directory and its progress output, in one place. */

/** Where run directories go, relative to the working directory, when `--out` is not given. */
export const DEFAULT_RUNS_DIR = '.troupe/runs';

/**
 * Agents of a plan running at once when neither the plan nor `--concurrency` says. Bounded so a
 * data set of thousands of tasks does not open thousands of provider requests at once.
 */
export const DEFAULT_FANOUT_CONCURRENCY = 16;

/** Worker threads a run uses when neither the plan nor `--threads` says. */
export const DEFAULT_THREADS = 2;

/** The TTY progress display redraws at most this often (10 frames per second). */
export const PROGRESS_FRAME_MS = 100;

/** Running agents whose latest line the TTY progress display shows. */
export const PROGRESS_BUSIEST_AGENTS = 4;

/** Characters of an agent's text or result shown in one line of progress or a table cell. */
export const LINE_EXCERPT_CHARS = 100;

/** Agents drawn in the HTML report's timeline; the rest are counted, not drawn. */
export const REPORT_TIMELINE_MAX_AGENTS = 400;

/**
 * Agents whose transcript the HTML report holds (failed and interrupted ones first); the others
 * get a line saying `troupe show RUN_DIR AGENT` prints theirs. Bounds the page for data sets of
 * thousands of agents.
 */
export const REPORT_TRANSCRIPT_MAX_AGENTS = 500;

/** Characters of a text (tool result, argument, input section) the HTML report shows before "show all". */
export const REPORT_TEXT_PREVIEW_CHARS = 1200;

/** Characters of one text the HTML report holds at most; `troupe show` prints the rest. */
export const REPORT_TEXT_MAX_CHARS = 100_000;

/** Lines of a text (tool result, answer, input section) `troupe show` prints before `--full`. */
export const SHOW_TEXT_LINES = 12;

/** Agents with their own bar in the HTML report's token and cost charts; the rest are summed. */
export const REPORT_CHART_AGENTS = 40;

/** A run directory's copy of the rows of its tasks file (src/run-dir/task-rows.ts). */
export const TASK_ROWS_FILE = 'tasks.jsonl';

/** Version of the run directory format (`plan.json`, `results.jsonl`, `summary.json`). */
export const RUN_DIR_FORMAT = 1;

/** Exit code of a run that the user interrupted (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;

/** Plan keys, in the order the docs list them. */
export const PLAN_KEYS = [
  'name',
  'agent',
  'runs',
  'tasks',
  'provider',
  'providerOptions',
  'model',
  'threads',
  'isolation',
  'concurrency',
  'cwd',
  'agents',
  'toolModules',
  'limits',
  'scorers',
  'modelMap',
  'mcpServers',
  'runLimits',
  'modelSettings',
  'permissions',
  'approvals',
] as const;

/** Keys of one entry of `runs`. */
export const RUN_KEYS = ['agent', 'task', 'context', 'metadata', 'id', 'expected', 'modelSettings'] as const;

/** Keys of one line of a tasks JSONL file. */
export const TASK_LINE_KEYS = ['task', 'context', 'metadata', 'id', 'expected', 'modelSettings'] as const;

/** Keys of `limits` (per agent). */
export const LIMIT_KEYS = [
  'maxSteps',
  'wallClockMs',
  'maxTotalTokens',
  'maxCostUsd',
  'truncationRetries',
] as const;

/** Keys of `runLimits` (the whole run). */
export const RUN_LIMIT_KEYS = ['maxTotalTokens', 'maxCostUsd'] as const;

/**
 * Bytes one line of a plan's tasks file may hold (`--max-task-line-bytes`): a longer line is a plan
 * problem naming its file and line, skipped as it is read, never held (a 2 GB line was read whole).
 * Four times the largest spawn input (MAX_SPAWN_INPUT_BYTES, 4 MiB), which a row's task, context
 * and metadata must fit anyway, leaves room for JSON escapes and an `expected` value.
 */
export const MAX_TASK_LINE_BYTES = 16 * 1024 * 1024;

/**
 * Bytes one line of `results.jsonl` may hold when a command reads it: a longer line is a problem of
 * the file (like a line that is not JSON), skipped as it is read, never held. A line holds an
 * answer and a result (each bounded by the model's output) and an error: far below this.
 */
export const MAX_RESULT_LINE_BYTES = 256 * 1024 * 1024;

/**
 * Bytes one line of `approvals.jsonl` or `events.jsonl` may hold when it is read: a longer line is
 * skipped unread and counted, like a damaged one. An approval holds a tool call's arguments (as a
 * journal's ToolCall line does: MAX_JOURNAL_LINE_BYTES), a run-log line a few hundred bytes.
 */
export const MAX_RECORD_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Characters of each agent's task a report keeps (the HTML report's agents table shows 80 of them);
 * `troupe show` prints the whole task.
 */
export const REPORT_TASK_CHARS = 200;
