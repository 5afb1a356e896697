/**
 * `--latency-ms` of `troupe run` and `troupe chat`: a delay before each answer of the simulated
 * model (its `latency` option, which a fan-out plan sets in `providerOptions`), so that a turn on it
 * takes long enough to try Ctrl-C in the middle of it. A real model's latency is its own: the flag
 * is refused for any other provider.
 */
import type { Command } from 'commander';
import { MAX_TIMER_MS } from '../../constants.ts';
import { UserError } from '../../errors.ts';
import { integerFlag } from './integer-flag.ts';

/** The flag as commander parses it, already checked. */
export interface LatencyFlags {
  readonly latencyMs?: number;
}

/** Adds `--latency-ms` to `command`. */
export function latencyOption(command: Command): Command {
  return command.option(
    '--latency-ms <ms>',
    'delay of each simulated model request, e.g. to try Ctrl-C mid-turn (simulated provider only; default 0)',
    latencyMs,
  );
}

/**
 * Throws UserError `invalid_option` (fields `option`, `provider`) when `--latency-ms` was given
 * for a provider other than the simulated model.
 */
export function checkLatencyProvider(latencyMs: number | undefined, provider: string): void {
  if (latencyMs === undefined || provider === 'simulated') return;
  throw new UserError(
    'invalid_option',
    `Expected --latency-ms only with the simulated model (it delays its canned answers), but the provider is ${provider}, whose latency is its own; drop --latency-ms or pass --provider simulated`,
    { option: 'latencyMs', provider },
  );
}

function latencyMs(value: string): number {
  return integerFlag(value, {
    min: 0,
    max: MAX_TIMER_MS,
    expected: `a non-negative integer (milliseconds) up to ${MAX_TIMER_MS}`,
  });
}
