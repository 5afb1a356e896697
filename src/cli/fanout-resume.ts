/**
 * `troupe resume RUN_DIR` for fan-out run directories: finishes the plan entries of an interrupted
 * run that had not completed, from their journals (see src/run-dir/resume-plan.ts), and with
 * `--retry-failed` runs failed ones again from theirs. The `resume` subcommand calls
 * {@link resumeRunDir} for a directory holding a `plan.json`.
 */
import { MAX_ADOPTION_SCAN_JOURNALS, MAX_STARTED_HEAD_BYTES } from '../constants.ts';
import type { FailureReason } from '../loop/types.ts';
import { loadAgentDefinitions } from '../run-dir/agent-files.ts';
import { changedDefinitions } from '../run-dir/definition-changes.ts';
import { executeSession } from '../run-dir/execute.ts';
import { printable } from '../run-dir/format.ts';
import { checkProvider } from '../run-dir/provider-choice.ts';
import { endOrphans, planResume } from '../run-dir/resume-plan.ts';
import { RunDirWriter, readRunDirState } from '../run-dir/run-dir.ts';
import { type RunPlan, runLimitsOf } from '../run-dir/run-plan.ts';
import { recordedSessions } from '../run-dir/summary.ts';
import type { UnendedBounds } from '../run-dir/timeline.ts';
import { sessionApprover } from './shared/approvers.ts';
import { checkRedisFlagsUsed, redisEngine } from './shared/engine.ts';
import type { CliIO } from './shared/io.ts';
import { type ProviderTimeoutFlags, withProviderTimeouts } from './shared/provider-timeouts.ts';
import { type OtlpFlags, withTelemetry } from './shared/telemetry.ts';

/** Options of {@link resumeRunDir}. */
export interface ResumeRunDirOptions {
  /** Print JSONL events instead of progress. */
  readonly json?: boolean;
  /**
   * The run's token budget (`--max-run-tokens`; 0 = unlimited), from this session on: recorded in
   * plan.json. @default plan.json's
   */
  readonly maxRunTokens?: number;
  /**
   * `--request-timeout-ms` / `--idle-timeout-ms` of a built-in HTTP provider, over plan.json's
   * (`TROUPE_REQUEST_TIMEOUT_MS` / `TROUPE_IDLE_TIMEOUT_MS` fill what neither names), from this
   * session on: recorded in plan.json. @default plan.json's, else the provider's
   */
  readonly providerTimeouts?: ProviderTimeoutFlags;
  /** Run again, from their journals, the entries that failed for one of these reasons. */
  readonly retry?: ReadonlySet<FailureReason>;
  /** Redis URL of a run on the redis engine. @default TROUPE_REDIS_URL */
  readonly redisUrl?: string;
  /** How long a lost Redis may stay away (`--redis-down-timeout-ms`). @default 60000 */
  readonly redisDownTimeoutMs?: number;
  /**
   * `--retain-seconds`: the Supervisor's `retainSeconds` from this session on: recorded in
   * plan.json. @default plan.json's (`troupe fanout --retain-seconds`), else kept until deleted
   */
  readonly retainSeconds?: number;
  /** Export traces (`--otlp`, `--otlp-content`; else the OTEL_* variables). */
  readonly otlp?: OtlpFlags;
  /** `--approve` rules: requests they allow are approved without asking. @default none */
  readonly approve?: readonly string[];
  /**
   * The bounds of the unended count's reads (tests: a small `maxHeadBytes`); no flag sets it.
   * @default MAX_STARTED_HEAD_BYTES
   */
  readonly unendedBounds?: UnendedBounds;
}

/**
 * plan.json with the limits this session's flags set over the recorded ones (the same object
 * when they change nothing).
 */
function resumedPlan(recorded: RunPlan, options: ResumeRunDirOptions, io: CliIO): RunPlan {
  let plan = recorded;
  if (options.maxRunTokens !== undefined && runLimitsOf(plan).maxTotalTokens !== options.maxRunTokens) {
    plan = { ...plan, runLimits: { ...runLimitsOf(plan), maxTotalTokens: options.maxRunTokens } };
  }
  if (
    options.retainSeconds !== undefined &&
    plan.backend === 'redis' &&
    plan.redisRetainSeconds !== options.retainSeconds
  ) {
    plan = { ...plan, redisRetainSeconds: options.retainSeconds };
  }
  const provider = withProviderTimeouts(plan.provider, options.providerTimeouts ?? {}, io);
  if (JSON.stringify(provider.config) !== JSON.stringify(plan.provider.config)) plan = { ...plan, provider };
  return plan;
}

/**
 * Finishes the run in `dir` and resolves to the exit code (0 every entry completed, 1 some failed,
 * 130 interrupted). Throws UserError `not_a_run_dir` when `dir` holds no fan-out run, and the
 * provider's errors (e.g. `missing_api_key`) before anything runs.
 */
export async function resumeRunDir(dir: string, options: ResumeRunDirOptions, io: CliIO): Promise<number> {
  // Result lines are read as a stream into what the summary and the decisions below need of each.
  const contents = readRunDirState(dir);
  const { paths } = contents;
  const plan = resumedPlan(contents.plan, options, io);
  const redisFlags = {
    ...(options.redisUrl === undefined ? {} : { redis: options.redisUrl }),
    ...(options.redisDownTimeoutMs === undefined ? {} : { redisDownTimeoutMs: options.redisDownTimeoutMs }),
    ...(options.retainSeconds === undefined ? {} : { retainSeconds: options.retainSeconds }),
    // Recorded at planning (and by a resume that gave its own): kept by every later session.
    ...(options.retainSeconds === undefined && plan.redisRetainSeconds !== undefined
      ? { retainSeconds: plan.redisRetainSeconds }
      : {}),
    ...(plan.redisQueue === undefined ? {} : { queue: plan.redisQueue }),
    ...(plan.redisPrefix === undefined ? {} : { prefix: plan.redisPrefix }),
  };
  checkRedisFlagsUsed(redisFlags, plan.backend === 'redis', `${dir} ran on the threads engine`);
  await checkProvider(plan.provider);
  const supervisor = plan.backend === 'redis' ? await redisEngine(redisFlags) : undefined;
  const definitions = await loadAgentDefinitions(plan.agentFiles);
  const writer = RunDirWriter.reopen(paths.root);
  // What this session runs with is what a later one (and `troupe report`) sees, not the first
  // session's limits again.
  if (plan !== contents.plan) writer.rewritePlan(plan);
  const decision = planResume(
    plan,
    paths,
    contents.results.resumeLines(),
    options.retry ? { retry: options.retry } : {},
  );
  for (const change of await changedDefinitions(decision.work, paths, plan.cwd, definitions)) {
    io.stderr(
      `${printable(`note: the definition of \`${change.agent}\` (${change.path}) changed since the run started; ${change.agentIds.length} resumed agent(s) continue with the definition recorded in their journals, not the file`)}
`,
    );
  }
  if (decision.notExamined.length > 0) {
    const shown = decision.notExamined.slice(0, 5).join(', ');
    const more = decision.notExamined.length > 5 ? ', ...' : '';
    io.stderr(
      `${printable(`warning: ${decision.notExamined.length} journal(s) were not examined for agents spawned by agents (their ids lie past ${MAX_STARTED_HEAD_BYTES} bytes of their first line): ${shown}${more}; such an agent gets no result line and, unfinished, is neither resumed nor ended`)}
`,
    );
  }
  const { exitCode, summary, unknownJournals } = await withTelemetry(
    options.otlp ?? {},
    io,
    plan.name ?? 'resume',
    (tracing) =>
      executeSession({
        plan,
        writer,
        work: decision.work,
        kind: 'resume',
        existing: contents.results,
        // Orphans' journals are ended only now, once the provider and the definitions are known good.
        recovered: [...decision.recovered, ...endOrphans(paths, decision.orphans)],
        previousSessions: recordedSessions(contents.summary, contents.events),
        definitions,
        json: options.json === true,
        io,
        supervisor: { ...supervisor, ...tracing },
        approver: sessionApprover(options.approve ?? [], plan.cwd, options.json === true),
        ...(options.unendedBounds === undefined ? {} : { unendedBounds: options.unendedBounds }),
      }),
  );
  const unknown = summary.counts.nested.unknown ?? 0;
  if (unknown > 0) {
    const more = unknown > unknownJournals.length ? ', ...' : '';
    io.stderr(
      `${printable(`warning: ${unknown} journal(s) without a result line could not be read for the agent that spawned them (their ids lie past ${options.unendedBounds?.maxHeadBytes ?? MAX_STARTED_HEAD_BYTES} bytes of their first line, or past ${MAX_ADOPTION_SCAN_JOURNALS} journals): ${unknownJournals.join(', ')}${more}; each may be an agent of the run left unended, counted in counts.nested.unknown of summary.json and in no other count`)}
`,
    );
  }
  return exitCode;
}
