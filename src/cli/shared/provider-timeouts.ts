/**
 * The provider time limits `troupe run`, `chat` and `fanout` let a user set: `--request-timeout-ms`
 * (one model request, stream included; the provider's `timeoutMs`) and `--idle-timeout-ms` (the
 * longest silence of a request; `idleTimeoutMs`), else `TROUPE_REQUEST_TIMEOUT_MS` and
 * `TROUPE_IDLE_TIMEOUT_MS`, else the provider's defaults. A local model that thinks silently for
 * minutes needs more than the default idle limit; a user who would rather fail fast, less.
 */
import type { Command } from 'commander';
import { MAX_TIMER_MS } from '../../constants.ts';
import { describeValue, UserError } from '../../errors.ts';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from '../../providers/constants.ts';
import type { Env } from '../../providers/environment.ts';
import type { ProviderChoice } from '../../run-dir/provider-choice.ts';
import { integerFlag, parseInteger } from './integer-flag.ts';
import type { CliIO } from './io.ts';

/** Variable read when `--request-timeout-ms` is not given. */
export const REQUEST_TIMEOUT_ENV = 'TROUPE_REQUEST_TIMEOUT_MS';
/** Variable read when `--idle-timeout-ms` is not given. */
export const IDLE_TIMEOUT_ENV = 'TROUPE_IDLE_TIMEOUT_MS';

/** The flags as commander parses them, each already checked. */
export interface ProviderTimeoutFlags {
  readonly requestTimeoutMs?: number;
  readonly idleTimeoutMs?: number;
}

/** The options of a built-in HTTP provider (`openai`, `anthropic`) the flags or environment set. */
export interface ProviderTimeouts {
  readonly timeoutMs?: number;
  readonly idleTimeoutMs?: number;
}

/** Adds `--request-timeout-ms` and `--idle-timeout-ms` to `command`. */
export function providerTimeoutOptions(command: Command): Command {
  return command
    .option(
      '--request-timeout-ms <ms>',
      `time limit of one model request, stream included (default: ${REQUEST_TIMEOUT_ENV}, else ${DEFAULT_REQUEST_TIMEOUT_MS})`,
      positiveMs,
    )
    .option(
      '--idle-timeout-ms <ms>',
      `longest silence of a model request before it fails \`timeout\` (default: ${IDLE_TIMEOUT_ENV}, else ${DEFAULT_IDLE_TIMEOUT_MS})`,
      positiveMs,
    );
}

/**
 * The provider options `flags`, else `env`, ask for (none when neither does). Throws UserError
 * `invalid_option` (field `option`: the variable) for a variable that is not a positive integer.
 */
export function providerTimeouts(flags: ProviderTimeoutFlags, env: Env = process.env): ProviderTimeouts {
  const timeoutMs = flags.requestTimeoutMs ?? fromEnv(env, REQUEST_TIMEOUT_ENV);
  const idleTimeoutMs = flags.idleTimeoutMs ?? fromEnv(env, IDLE_TIMEOUT_ENV);
  return {
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
  };
}

/** The two limits the flags set: one request's time (`timeoutMs`) and its longest silence (`idleTimeoutMs`). */
export type TimeoutLimit = 'request' | 'idle';

/**
 * The settings (`--request-timeout-ms`, else `TROUPE_REQUEST_TIMEOUT_MS`; the same for the idle
 * limit) that set one of the `limits`: what a warning names when the provider does not take them.
 */
export function timeoutSettings(
  flags: ProviderTimeoutFlags,
  env: Env = process.env,
  limits: readonly TimeoutLimit[] = ['request', 'idle'],
): string[] {
  const set = (value: string | undefined): boolean => value !== undefined && value.trim() !== '';
  const named: string[] = [];
  if (limits.includes('request')) {
    if (flags.requestTimeoutMs !== undefined) named.push('--request-timeout-ms');
    else if (set(env[REQUEST_TIMEOUT_ENV])) named.push(REQUEST_TIMEOUT_ENV);
  }
  if (limits.includes('idle')) {
    if (flags.idleTimeoutMs !== undefined) named.push('--idle-timeout-ms');
    else if (set(env[IDLE_TIMEOUT_ENV])) named.push(IDLE_TIMEOUT_ENV);
  }
  return named;
}

/**
 * The kinds of provider that do not take every time limit from the command line: the simulated
 * model takes the request limit (it times its `latency`) but has no silence to time; a provider
 * module takes neither.
 */
export type UntimedProvider = 'simulated' | 'module';

/** The limits a provider of `kind` does not take from the command line. */
function unappliedLimits(kind: UntimedProvider): readonly TimeoutLimit[] {
  return kind === 'simulated' ? ['idle'] : ['request', 'idle'];
}

/**
 * The warning (without `troupe: warning: `) that the time limits `settings` name do not apply to
 * provider `name`, which is the simulated model (`settings` then name only the idle limit) or a
 * provider module; undefined when none is set. The simulated model streams nothing, so it has no
 * silence to time; a provider module's options are its own (the plan's `providerOptions`), and
 * troupe cannot tell whether it would heed `timeoutMs`.
 */
export function unappliedTimeoutsWarning(
  settings: readonly string[],
  name: string,
  kind: UntimedProvider,
): string | undefined {
  if (settings.length === 0) return undefined;
  const what = settings.join(' and ');
  const verb = settings.length === 1 ? 'has' : 'have';
  return kind === 'simulated'
    ? `${what} ${verb} no effect: provider ${name} is the simulated model, which streams nothing whose silence could be timed (the request time limit times its latency)`
    : `${what} ${verb} no effect: provider ${name} is a provider module, whose time limits are its own; set them in the plan's providerOptions if its factory reads them`;
}

/**
 * Writes {@link unappliedTimeoutsWarning} to stderr (`troupe: warning: ...`) when `flags` or `env`
 * set a time limit provider `name` does not take (for the simulated model: the idle limit).
 */
export function reportUnappliedTimeouts(
  io: Pick<CliIO, 'stderr'>,
  flags: ProviderTimeoutFlags,
  name: string,
  kind: UntimedProvider,
  env: Env = process.env,
): void {
  const warning = unappliedTimeoutsWarning(timeoutSettings(flags, env, unappliedLimits(kind)), name, kind);
  if (warning !== undefined) io.stderr(`troupe: warning: ${warning}\n`);
}

/**
 * The choice with the time limits of `--request-timeout-ms` / `--idle-timeout-ms` written into a
 * built-in provider's options (they travel in plan.json to every worker), over the plan's
 * `providerOptions` (`troupe fanout`) or those plan.json recorded (`troupe resume RUN_DIR`); the
 * variables only fill what neither names. The simulated model takes the request limit alone (it
 * times its `latency`), with a warning naming an idle limit set; a module provider is left as it is
 * (its options are its own), with a warning naming the flags or variables that set a limit.
 */
export function withProviderTimeouts(
  choice: ProviderChoice,
  flags: ProviderTimeoutFlags,
  io: Pick<CliIO, 'stderr'>,
  env: Env = process.env,
): ProviderChoice {
  const { config } = choice;
  if (config.kind === 'module') {
    reportUnappliedTimeouts(io, flags, choice.name, config.kind, env);
    return choice;
  }
  const fromEnv = providerTimeouts({}, env);
  const fromFlags = providerTimeouts(flags, {});
  let options: Record<string, unknown>;
  if (config.kind === 'simulated') {
    reportUnappliedTimeouts(io, flags, choice.name, config.kind, env);
    options = { ...requestLimit(fromEnv), ...config.options, ...requestLimit(fromFlags) };
  } else {
    options = { ...fromEnv, ...config.options, ...fromFlags };
  }
  if (Object.keys(options).length === 0) return choice;
  return { ...choice, config: { ...config, options } };
}

/** `timeouts` without the idle limit. */
function requestLimit(timeouts: ProviderTimeouts): ProviderTimeouts {
  return timeouts.timeoutMs === undefined ? {} : { timeoutMs: timeouts.timeoutMs };
}

function fromEnv(env: Env, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const parsed = parseMs(raw);
  if (parsed === undefined) {
    throw new UserError(
      'invalid_option',
      `Expected ${name} to be a positive integer (milliseconds) up to ${MAX_TIMER_MS}, got ${describeValue(raw)}`,
      { option: name },
    );
  }
  return parsed;
}

/** Up to the longest timer delay: past it Node fires at once, so every request failed at once. */
function parseMs(value: string): number | undefined {
  return parseInteger(value, 1, MAX_TIMER_MS);
}

function positiveMs(value: string): number {
  return integerFlag(value, {
    min: 1,
    max: MAX_TIMER_MS,
    expected: `a positive integer (milliseconds) up to ${MAX_TIMER_MS}`,
  });
}
