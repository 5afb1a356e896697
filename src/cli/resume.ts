/**
 * `troupe resume JOURNAL`: continues an agent from its journal after a crash or a kill. Finished
 * tool calls are not run again; a call that was cut off is recorded as interrupted. A directory
 * is a fan-out run directory and is handed to the fan-out resume.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { describeValue, SystemError, UserError } from '../errors.ts';
import { FAILURE_REASONS, type FailureReason } from '../loop/types.ts';
import { NOT_RETRIED_BY_DEFAULT } from '../run-dir/results.ts';
import { COMMAND_HELP } from './commands.ts';
import { resumeRunDir } from './fanout-resume.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import {
  REDIS_DOWN_TIMEOUT_HELP,
  RETAIN_SECONDS_HELP,
  redisDownTimeoutMs,
  retainSeconds,
} from './shared/engine.ts';
import { nonNegativeInteger } from './shared/integer-flag.ts';
import type { CliIO } from './shared/io.ts';
import { executeLive } from './shared/live.ts';
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
import { prepareResume } from './shared/session.ts';
import { type OtlpFlags, otlpOptions, withTelemetry } from './shared/telemetry.ts';

interface ResumeFlags extends OtlpFlags, PermissionFlags, ProviderTimeoutFlags {
  readonly json?: boolean;
  readonly cwd?: string;
  readonly maxRunTokens?: number;
  readonly retryFailed?: boolean;
  readonly reason?: readonly FailureReason[];
  readonly redis?: string;
  readonly redisDownTimeoutMs?: number;
  readonly retainSeconds?: number;
}

function reasons(value: string): FailureReason[] {
  const list = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const unknown = list.filter((item) => !(FAILURE_REASONS as readonly string[]).includes(item));
  if (list.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(
      `Expected failure reasons from ${FAILURE_REASONS.join(', ')}, got ${describeValue(value)}.`,
    );
  }
  return list as FailureReason[];
}

/** Registers `troupe resume` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const command = program
    .command('resume')
    .description(COMMAND_HELP.resume.description)
    .argument('<journal>', 'journal file of the agent, or a run directory')
    .option('--json', 'print JSON lines: a Run header, every new audit event as journalled, an Outcome')
    // Checked in the action, not by a parser: with a run directory --cwd is refused whatever it
    // names, and a parser would report a missing directory first.
    .option('--cwd <dir>', 'journal: working directory (default: the one recorded when the run started)')
    .option(
      '--max-run-tokens <n>',
      "a run directory's token budget from this session on, recorded in its plan.json (default: the run's; 0 = unlimited)",
      nonNegativeInteger,
    )
    .option(
      '--retry-failed',
      'run directory: run failed agents again from their journals (finished tool calls are not run again)',
    )
    .option(
      '--reason <reasons>',
      'with --retry-failed: only agents failed for these reasons, comma-separated (default: all but cancelled and invalid_request)',
      reasons,
    )
    .option('--redis <url>', 'Redis URL of a run made with --backend redis (default: TROUPE_REDIS_URL)')
    .option('--redis-down-timeout-ms <ms>', REDIS_DOWN_TIMEOUT_HELP, redisDownTimeoutMs)
    .option('--retain-seconds <s>', `run directory: ${RETAIN_SECONDS_HELP}`, retainSeconds);
  permissionOptions(otlpOptions(providerTimeoutOptions(command))).action(
    async (target: string, flags: ResumeFlags) => {
      const path = resolve(target);
      const json = flags.json === true;
      if (flags.reason !== undefined && flags.retryFailed !== true) {
        throw new UserError('invalid_option', '--reason goes with --retry-failed', { option: '--reason' });
      }
      if (!existsSync(path)) {
        // Named for both things resume takes: "a journal file" alone sent people who passed a run
        // directory's path with a typo looking for a journal.
        throw new SystemError(
          'journal_not_found',
          `Expected a journal file or a run directory at ${path}, found neither`,
          { path },
        );
      }
      if (statSync(path).isDirectory()) {
        // The flags a run directory refuses are refused before any of them is read (a rules file,
        // a directory): what the user gets told is the flag, not what its value names.
        refusePermissionFlags(flags);
        // The plan's cwd found the definitions the run's journals pinned and is where every agent
        // works (`troupe fanout` takes it from the plan, not a flag): another one for one session
        // would split a run between two trees.
        if (flags.cwd !== undefined) {
          throw new UserError(
            'invalid_option',
            '--cwd applies to a journal; the agents of a run directory keep the working directory recorded in its plan.json',
            { option: '--cwd' },
          );
        }
        const retry = flags.retryFailed
          ? new Set(flags.reason ?? FAILURE_REASONS.filter((reason) => !NOT_RETRIED_BY_DEFAULT.has(reason)))
          : undefined;
        const options = {
          json,
          ...(flags.maxRunTokens === undefined ? {} : { maxRunTokens: flags.maxRunTokens }),
          ...(retry ? { retry } : {}),
          ...(flags.redis === undefined ? {} : { redisUrl: flags.redis }),
          ...(flags.redisDownTimeoutMs === undefined ? {} : { redisDownTimeoutMs: flags.redisDownTimeoutMs }),
          ...(flags.retainSeconds === undefined ? {} : { retainSeconds: flags.retainSeconds }),
          ...(flags.approve === undefined ? {} : { approve: flags.approve }),
          providerTimeouts: timeoutFlags(flags),
          otlp: flags,
        };
        setExit(await resumeRunDir(path, options, io));
        return;
      }
      if (flags.retryFailed) {
        throw new UserError(
          'invalid_option',
          '--retry-failed needs a run directory; a single journal is resumed as it is',
          { option: '--retry-failed' },
        );
      }
      refuseRunDirFlags(flags);
      if (flags.cwd !== undefined) checkedDirectory('--cwd', flags.cwd);
      const asked = commandPermissions(flags);
      reportPermissionWarnings(asked, io);
      const session = await prepareResume({
        journal: path,
        ...(flags.cwd === undefined ? {} : { cwd: resolve(flags.cwd) }),
        permissions: agentPermissions(asked),
        // A journal records no provider options: the flags, else the variables, else the defaults.
        providerTimeouts: providerTimeouts(flags),
      });
      if (session.info.simulated) reportUnappliedTimeouts(io, flags, session.info.provider, 'simulated');
      setExit(
        await withTelemetry(flags, io, 'resume', ({ tracing }) =>
          executeLive(session, io, { json, approve: asked.approve, ...(tracing ? { tracing } : {}) }),
        ),
      );
    },
  );
}

/** The permission flags a run directory refuses, as typed: its agents keep the permissions of its plan. */
const RUN_DIR_REFUSED_PERMISSION_FLAGS: readonly (readonly [keyof PermissionFlags, string])[] = [
  ['allow', '--allow'],
  ['ask', '--ask'],
  ['deny', '--deny'],
  ['permissions', '--permissions'],
  ['permissionMode', '--permission-mode'],
  ['allowBypassPermissions', '--allow-bypass-permissions'],
  ['approvalTimeout', '--approval-timeout'],
];

/**
 * Throws UserError `invalid_option` (field `option`: the first, as typed) for the permission flags
 * given with a run directory: of them only `--approve` applies to its agents.
 */
function refusePermissionFlags(flags: PermissionFlags): void {
  const given = RUN_DIR_REFUSED_PERMISSION_FLAGS.filter(([key]) => flags[key] !== undefined).map(
    ([, flag]) => flag,
  );
  const [first] = given;
  if (first === undefined) return;
  throw new UserError(
    'invalid_option',
    `${given.join(', ')} ${given.length === 1 ? 'applies' : 'apply'} to a journal; the agents of a run directory keep the permissions of its plan (of the permission flags only --approve is taken)`,
    { option: first },
  );
}

/** Throws UserError `invalid_option` naming `option` when `value` is not an existing directory. */
function checkedDirectory(option: string, value: string): void {
  try {
    existingDirectory(value);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new UserError('invalid_option', `${option}: ${error.message}`, { option });
  }
}

/**
 * Throws UserError `invalid_option` (field `option`: the first) for the flags that only a run
 * directory takes: a single journal has no run budget, runs in this process (no Redis), and has no
 * plan.json to record them in, so they would be ignored.
 */
function refuseRunDirFlags(flags: ResumeFlags): void {
  const given = [
    ...(flags.maxRunTokens === undefined ? [] : ['--max-run-tokens']),
    ...(flags.redis === undefined ? [] : ['--redis']),
    ...(flags.redisDownTimeoutMs === undefined ? [] : ['--redis-down-timeout-ms']),
    ...(flags.retainSeconds === undefined ? [] : ['--retain-seconds']),
  ];
  const [first] = given;
  if (first === undefined) return;
  throw new UserError(
    'invalid_option',
    `${given.join(', ')} only ${given.length === 1 ? 'applies' : 'apply'} to a run directory; a single journal is resumed in this process, with no run budget or Redis`,
    { option: first },
  );
}

/** The time-limit flags alone. */
function timeoutFlags(flags: ProviderTimeoutFlags): ProviderTimeoutFlags {
  return {
    ...(flags.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: flags.requestTimeoutMs }),
    ...(flags.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: flags.idleTimeoutMs }),
  };
}
