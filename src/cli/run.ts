/**
 * `troupe run AGENT --task TEXT`: runs one agent in this process with live progress, journals it,
 * and prints its result. Exits 0 when the agent completed and 1 when it failed.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { DEFAULT_MAX_TOTAL_TOKENS, HARD_MAX_STEPS } from '../constants.ts';
import { describeValue } from '../errors.ts';
import { parseModelMap } from '../providers/models.ts';
import { COMMAND_HELP } from './commands.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import { integerFlag, nonNegativeInteger } from './shared/integer-flag.ts';
import type { CliIO } from './shared/io.ts';
import { type LatencyFlags, latencyOption } from './shared/latency-flag.ts';
import { executeLive } from './shared/live.ts';
import {
  addModelSettingsOptions,
  type ModelSettingsFlags,
  modelSettingsFromFlags,
} from './shared/model-flags.ts';
import {
  agentPermissions,
  commandPermissions,
  type PermissionFlags,
  permissionOptions,
  reportPermissionWarnings,
} from './shared/permission-flags.ts';
import {
  type ProviderTimeoutFlags,
  providerTimeoutOptions,
  providerTimeouts,
  reportUnappliedTimeouts,
} from './shared/provider-timeouts.ts';
import { prepareRun } from './shared/session.ts';
import { type OtlpFlags, otlpOptions, withTelemetry } from './shared/telemetry.ts';

interface RunFlags
  extends ModelSettingsFlags,
    PermissionFlags,
    OtlpFlags,
    ProviderTimeoutFlags,
    LatencyFlags {
  readonly task: string;
  readonly provider?: string;
  readonly model?: string;
  readonly modelMap?: string[];
  readonly journal?: string;
  readonly cwd?: string;
  readonly json?: boolean;
  readonly maxSteps?: number;
  readonly maxTokens?: number;
  readonly maxCost?: number;
  readonly timeLimit?: number;
}

/** Registers `troupe run` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const command = program
    .command('run')
    .description(COMMAND_HELP.run.description)
    .argument('<agent>', 'agent name (see `troupe agents list`)')
    .requiredOption('--task <text>', 'the task to give the agent')
    .option(
      '--provider <name>',
      'simulated, openai or anthropic (default: openai or anthropic when its API key is set, else simulated)',
    )
    .option('--model <model>', "model name (default: the definition's model, else the provider's default)")
    .option(
      '--model-map <alias=model...>',
      'model aliases added or overridden, e.g. sonnet=claude-sonnet-4-5 (see docs/definitions.md)',
    )
    .option('--journal <file>', 'journal file (default: <cwd>/.troupe/runs/<timestamp>-<agent>-<id>.jsonl)')
    .option(
      '--cwd <dir>',
      'working directory: agents are found from it, file tools are confined to it',
      existingDirectory,
    )
    .option('--json', 'print JSON lines: a Run header, every audit event as journalled, an Outcome')
    .option(
      '--max-steps <n>',
      `model requests allowed, at most ${HARD_MAX_STEPS} (default: the definition's maxSteps)`,
      maxSteps,
    )
    .option(
      '--max-tokens <n>',
      `token budget, input + output (default: ${DEFAULT_MAX_TOTAL_TOKENS}; 0 = unlimited)`,
      nonNegativeInteger,
    )
    .option('--max-cost <usd>', 'cost budget in USD (default: none; needs a priced model)', nonNegativeNumber)
    .option('--time-limit <ms>', 'wall-clock limit in ms (default: none)', nonNegativeInteger);
  addModelSettingsOptions(
    permissionOptions(otlpOptions(latencyOption(providerTimeoutOptions(command)))),
    "over the definition's modelSettings",
  ).action(async (agent: string, flags: RunFlags) => {
    const asked = commandPermissions(flags, resolve(flags.cwd ?? process.cwd()));
    reportPermissionWarnings(asked, io);
    const session = await prepareRun({
      agent,
      task: flags.task,
      cwd: resolve(flags.cwd ?? process.cwd()),
      ...(flags.provider === undefined ? {} : { provider: flags.provider }),
      ...(flags.model === undefined ? {} : { model: flags.model }),
      ...(flags.modelMap === undefined ? {} : { modelMap: parseModelMap(flags.modelMap, '--model-map') }),
      ...(flags.journal === undefined ? {} : { journal: resolve(flags.journal) }),
      ...(flags.maxSteps === undefined ? {} : { maxSteps: flags.maxSteps }),
      ...(flags.maxTokens === undefined ? {} : { maxTokens: flags.maxTokens }),
      ...(flags.maxCost === undefined ? {} : { maxCostUsd: flags.maxCost }),
      ...(flags.timeLimit === undefined ? {} : { wallClockMs: flags.timeLimit }),
      modelSettings: modelSettingsFromFlags(flags),
      permissions: agentPermissions(asked),
      providerTimeouts: providerTimeouts(flags),
      ...(flags.latencyMs === undefined ? {} : { simulatedLatencyMs: flags.latencyMs }),
    });
    if (session.info.createdDirectory !== undefined)
      io.stderr(`troupe: created directory ${session.info.createdDirectory} for the journal\n`);
    if (session.info.simulated) reportUnappliedTimeouts(io, flags, session.info.provider, 'simulated');
    const json = flags.json === true;
    setExit(
      await withTelemetry(flags, io, `run ${agent}`, ({ tracing }) =>
        executeLive(session, io, { json, approve: asked.approve, ...(tracing ? { tracing } : {}) }),
      ),
    );
  });
}

function nonNegativeNumber(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0) {
    throw new InvalidArgumentError(
      `Expected a non-negative number (0 = unlimited), got ${describeValue(value)}.`,
    );
  }
  return parsed;
}

/** `--max-steps`: 500 ran 250 without a word (the loop's cap); it is refused like a definition's is warned of. */
function maxSteps(value: string): number {
  return integerFlag(value, {
    min: 1,
    max: HARD_MAX_STEPS,
    expected: `a positive integer of at most ${HARD_MAX_STEPS} (runs stop at ${HARD_MAX_STEPS} model requests)`,
  });
}
