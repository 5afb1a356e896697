/**
 * `troupe fanout PLAN.yaml`: runs every agent of a plan with the Supervisor and keeps the results
 * in a run directory (see docs/cli.md).
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { DEFAULT_RUN_MAX_TOTAL_TOKENS } from '../constants.ts';
import { describeValue } from '../errors.ts';
import { parseModelMap } from '../providers/models.ts';
import { MAX_TASK_LINE_BYTES } from '../run-dir/constants.ts';
import { executeSession } from '../run-dir/execute.ts';
import { printable } from '../run-dir/format.ts';
import { loadPlan } from '../run-dir/plan.ts';
import { formatPlanProblem, planProblemsOf } from '../run-dir/plan-problems.ts';
import { settingsProblems } from '../run-dir/plan-settings.ts';
import {
  checkProvider,
  chooseProvider,
  defaultModelFor,
  withEnvironmentBaseURL,
} from '../run-dir/provider-choice.ts';
import { defaultRunDir, RunDirWriter } from '../run-dir/run-dir.ts';
import { resolveRunPlan } from '../run-dir/run-plan.ts';
import { checkScorerModules } from '../run-dir/run-scoring.ts';
import { COMMAND_HELP } from './commands.ts';
import { sessionApprover } from './shared/approvers.ts';
import {
  checkRedisFlagsUsed,
  REDIS_DOWN_TIMEOUT_HELP,
  RETAIN_SECONDS_HELP,
  redisDownTimeoutMs,
  redisEngine,
  retainSeconds,
} from './shared/engine.ts';
import { nonNegativeInteger, positiveInteger } from './shared/integer-flag.ts';
import type { CliIO } from './shared/io.ts';
import {
  addModelSettingsOptions,
  type ModelSettingsFlags,
  modelSettingsFromFlags,
} from './shared/model-flags.ts';
import {
  commandPermissions,
  type PermissionFlags,
  permissionOptions,
  reportPermissionWarnings,
} from './shared/permission-flags.ts';
import {
  type ProviderTimeoutFlags,
  providerTimeoutOptions,
  withProviderTimeouts,
} from './shared/provider-timeouts.ts';
import { type OtlpFlags, otlpOptions, withTelemetry } from './shared/telemetry.ts';

interface FanoutFlags extends ModelSettingsFlags, PermissionFlags, OtlpFlags, ProviderTimeoutFlags {
  readonly threads?: number;
  readonly isolation?: 'shared' | 'thread';
  readonly concurrency?: number;
  readonly provider?: string;
  readonly model?: string;
  readonly modelMap?: string[];
  readonly out?: string;
  readonly json?: boolean;
  readonly backend?: 'threads' | 'redis';
  readonly redis?: string;
  readonly redisDownTimeoutMs?: number;
  readonly queue?: string;
  readonly prefix?: string;
  readonly retainSeconds?: number;
  readonly maxRunTokens?: number;
  readonly maxTaskLineBytes?: number;
}

/** Registers `troupe fanout` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const command = program
    .command('fanout')
    .description(COMMAND_HELP.fanout.description)
    .argument('<plan>', 'plan file (YAML): `runs: [{agent, task}]`, or `agent:` plus a `tasks:` JSONL file')
    .option('--threads <n>', 'worker threads (default: the plan, else 2)', positiveInteger)
    .option('--isolation <mode>', '`shared` (many agents per thread) or `thread` (one per thread)', isolation)
    .option('--concurrency <n>', 'agents running at once (default: the plan, else 16)', positiveInteger)
    .option(
      '--provider <name>',
      'simulated, openai or anthropic (default: the plan, else from the environment)',
    )
    .option(
      '--model <model>',
      'model for every agent (default: the plan, else each definition or the provider default)',
    )
    .option(
      '--model-map <alias=model...>',
      'model aliases added or overridden, e.g. sonnet=claude-sonnet-4-5 (over the plan `modelMap`)',
    )
    .option('--out <dir>', 'run directory (default: .troupe/runs/<timestamp>-<id>)')
    .option('--json', 'print JSONL events instead of progress')
    .option(
      '--backend <backend>',
      '`threads` (this process) or `redis` (agents run by `troupe worker` processes)',
      backendName,
    )
    .option('--redis <url>', 'Redis URL for --backend redis (default: TROUPE_REDIS_URL)')
    .option('--redis-down-timeout-ms <ms>', REDIS_DOWN_TIMEOUT_HELP, redisDownTimeoutMs)
    .option(
      '--queue <name>',
      'with --backend redis: the queue of the `troupe worker`s (default: troupe-agents)',
    )
    .option(
      '--prefix <prefix>',
      'with --backend redis: the Redis key prefix of the workers (default: troupe)',
    )
    .option('--retain-seconds <s>', RETAIN_SECONDS_HELP, retainSeconds)
    .option(
      '--max-run-tokens <n>',
      `token budget of the whole run, all agents (default: the plan's runLimits, else ${DEFAULT_RUN_MAX_TOTAL_TOKENS}; 0 = unlimited)`,
      nonNegativeInteger,
    )
    .option(
      '--max-task-line-bytes <n>',
      `bytes one line of the plan's tasks file may hold (default: ${MAX_TASK_LINE_BYTES})`,
      positiveInteger,
    );
  addModelSettingsOptions(
    permissionOptions(otlpOptions(providerTimeoutOptions(command))),
    "every agent: over the plan's and the definitions' modelSettings, under a run's own",
  ).action(async (planFile: string, flags: FanoutFlags) => {
    setExit(await fanout(planFile, flags, io));
  });
}

/** Runs `troupe fanout` and resolves to its exit code. */
export async function fanout(planFile: string, flags: FanoutFlags, io: CliIO): Promise<number> {
  checkRedisFlagsUsed(flags, flags.backend === 'redis', 'add --backend redis');
  const cwd = process.cwd();
  let loaded: Awaited<ReturnType<typeof loadPlan>>;
  try {
    loaded = await loadPlan(planFile, {
      cwd,
      ...(flags.maxTaskLineBytes === undefined ? {} : { maxTaskLineBytes: flags.maxTaskLineBytes }),
    });
  } catch (error) {
    const problems = planProblemsOf(error);
    if (!problems) throw error;
    for (const problem of problems) io.stderr(`${formatPlanProblem(problem, cwd)}\n`);
    io.stderr(`troupe: ${problems.length} problem(s) in the plan; nothing was run\n`);
    return 1;
  }
  const { plan, definitions } = loaded;
  const asked = commandPermissions(flags);
  reportPermissionWarnings(asked, io);
  const chosen = withProviderTimeouts(
    chooseProvider({
      ...(flags.provider === undefined ? {} : { flag: flags.provider }),
      ...(plan.provider === undefined ? {} : { plan: plan.provider }),
      ...(plan.providerOptions === undefined ? {} : { options: plan.providerOptions }),
    }),
    flags,
    io,
  );
  // Workers of the redis engine read their own environment: the base URL this one names travels
  // in the plan (keys do not).
  const provider = flags.backend === 'redis' ? withEnvironmentBaseURL(chosen) : chosen;
  await checkProvider(provider);
  const runPlan = resolveRunPlan(
    plan,
    provider,
    {
      ...(flags.threads === undefined ? {} : { threads: flags.threads }),
      ...(flags.isolation === undefined ? {} : { isolation: flags.isolation }),
      ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
      ...(flags.model === undefined ? {} : { model: flags.model }),
      ...(flags.backend === undefined ? {} : { backend: flags.backend }),
      ...(flags.queue === undefined ? {} : { redisQueue: flags.queue }),
      ...(flags.prefix === undefined ? {} : { redisPrefix: flags.prefix }),
      ...(flags.retainSeconds === undefined ? {} : { redisRetainSeconds: flags.retainSeconds }),
      ...(flags.modelMap === undefined ? {} : { modelMap: parseModelMap(flags.modelMap, '--model-map') }),
      ...(flags.maxRunTokens === undefined ? {} : { maxRunTokens: flags.maxRunTokens }),
      modelSettings: modelSettingsFromFlags(flags),
      ...(asked.permissions === undefined ? {} : { permissions: asked.permissions }),
      ...(asked.approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs: asked.approvalTimeoutMs }),
    },
    defaultModelFor(provider),
  );
  // Checked before the run directory exists: a misconfigured engine or a scorer module that does
  // not export a function leaves nothing behind, nor do settings every agent would fail on.
  await checkScorerModules(runPlan);
  const unsettled = await settingsProblems(runPlan, definitions);
  if (unsettled.length > 0) {
    for (const problem of unsettled) io.stderr(`${printable(formatPlanProblem(problem, cwd))}\n`);
    io.stderr(`troupe: ${unsettled.length} problem(s) with the model settings; nothing was run\n`);
    return 1;
  }
  const supervisor = flags.backend === 'redis' ? await redisEngine(flags) : undefined;
  const writer = RunDirWriter.create(
    flags.out === undefined ? defaultRunDir(cwd, runPlan.runId) : resolve(flags.out),
    runPlan,
  );
  // The plan as written: a tasks file's rows are read from the run directory's copy from now on.
  const stored = writer.plan ?? runPlan;
  const { exitCode } = await withTelemetry(flags, io, stored.name ?? 'fanout', (tracing) =>
    executeSession({
      plan: stored,
      writer,
      work: stored.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
      kind: 'fanout',
      definitions,
      json: flags.json === true,
      io,
      supervisor: { ...supervisor, ...tracing },
      approver: sessionApprover(asked.approve, stored.cwd, flags.json === true),
    }),
  );
  return exitCode;
}

function backendName(value: string): 'threads' | 'redis' {
  if (value === 'threads' || value === 'redis') return value;
  throw new InvalidArgumentError(`Expected \`threads\` or \`redis\`, got ${describeValue(value)}.`);
}

function isolation(value: string): 'shared' | 'thread' {
  if (value !== 'shared' && value !== 'thread')
    throw new InvalidArgumentError(`Expected \`shared\` or \`thread\`, got ${describeValue(value)}.`);
  return value;
}
