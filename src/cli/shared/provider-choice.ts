/**
 * Which provider and model a command-line run uses, and the one line that says so. The simulated
 * model is the default whenever no API key is configured, so every run on it announces itself:
 * nobody should mistake its answers for a real model's.
 */
import { describeValue, UserError } from '../../errors.ts';
import { type Env, providerFromEnvironment, REAL_PROVIDER_HINT } from '../../providers/environment.ts';
import { createProvider, PROVIDER_NAMES, type ProviderName } from '../../providers/factory.ts';
import { type ModelMap, resolveModel as resolveModelId } from '../../providers/models.ts';
import type { Provider } from '../../providers/types.ts';
import { checkLatencyProvider } from './latency-flag.ts';
import type { ProviderTimeouts } from './provider-timeouts.ts';

export type { Env };

/** Where the provider name came from. */
export type ProviderSource = 'flag' | 'environment' | 'journal';

/** A provider ready to run, with the line that announces it. */
export interface ProviderChoice {
  readonly name: ProviderName;
  readonly provider: Provider;
  /** True for the simulated model: no model is called and every answer is made up. */
  readonly simulated: boolean;
  /** `provider: NAME (why)`, printed first by every command that runs an agent. */
  readonly notice: string;
}

/**
 * The provider named by `--provider`, or else the one `env` selects (see `providerFromEnvironment`,
 * the rule the library follows too).
 * Throws UserError `unknown_provider` for a name troupe does not know, `missing_api_key` when a
 * real provider has no key, and `invalid_option` for a `latencyMs` (`--latency-ms`) given to
 * another provider than the simulated model.
 */
export function chooseProvider(
  flag: string | undefined,
  env: Env = process.env,
  timeouts: ProviderTimeouts = {},
  latencyMs?: number,
): ProviderChoice {
  if (flag !== undefined) return providerByName(flag, 'flag', env, timeouts, latencyMs);
  return providerByName(providerFromEnvironment(env).name, 'environment', env, timeouts, latencyMs);
}

/**
 * Builds the provider called `name`; `source` only changes the notice. `timeouts` go to a real
 * provider; the simulated model takes `timeoutMs` alone (it times its latency), as it streams
 * nothing whose silence `idleTimeoutMs` could time. `latencyMs` (`--latency-ms`) is the simulated
 * model's `latency`; given for another provider, it is UserError `invalid_option`.
 */
export function providerByName(
  name: string,
  source: ProviderSource,
  env: Env = process.env,
  timeouts: ProviderTimeouts = {},
  latencyMs?: number,
): ProviderChoice {
  const known = PROVIDER_NAMES.find((candidate) => candidate === name);
  if (known === undefined) {
    throw new UserError(
      'unknown_provider',
      `Expected a provider name (${PROVIDER_NAMES.join(', ')}), got ${describeValue(name)}`,
      { provider: name },
    );
  }
  checkLatencyProvider(latencyMs, known);
  const provider =
    known === 'simulated'
      ? createProvider('simulated', {
          ...(timeouts.timeoutMs === undefined ? {} : { timeoutMs: timeouts.timeoutMs }),
          ...(latencyMs === undefined ? {} : { latency: latencyMs }),
        })
      : createProvider(known, { env, ...timeouts });
  return {
    name: known,
    provider,
    simulated: known === 'simulated',
    notice: providerNotice(known, source, env),
  };
}

/**
 * The model id to ask for (see `resolveModel` in providers/models.ts): `--model`, else the
 * definition's model (`inherit` and `default` mean the provider's default model here, where no
 * agent spawned this one), with aliases such as `sonnet` resolved for the provider and `modelMap`.
 * The simulated model ignores the definition's model: no real model is called, and a name like
 * `sonnet` would only suggest one was.
 */
export function resolveModel(
  provider: ProviderName,
  flag: string | undefined,
  definitionModel: string,
  modelMap: ModelMap = {},
): string {
  if (flag !== undefined) {
    if (flag.trim() === '') {
      throw new UserError(
        'invalid_option',
        `Expected \`--model\` to name a model, got ${describeValue(flag)}`,
        {
          option: 'model',
        },
      );
    }
  }
  return resolveModelId({
    kind: provider,
    provider,
    ...(flag === undefined ? {} : { requested: flag }),
    definitionModel,
    modelMap,
  }).id;
}

/** The `provider: NAME (why)` line for a provider chosen from `source`. */
export function providerNotice(name: string, source: ProviderSource, env: Env = process.env): string {
  if (name === 'simulated') {
    const why =
      source === 'environment'
        ? `no API key found; ${REAL_PROVIDER_HINT} to use a real model`
        : source === 'flag'
          ? 'chosen with --provider; no model is called and every answer is simulated'
          : 'recorded in the journal; no model is called and every answer is simulated';
    return `provider: simulated (${why})`;
  }
  if (source === 'flag') return `provider: ${name}`;
  if (source === 'journal') return `provider: ${name} (recorded in the journal)`;
  const variable =
    providerFromEnvironment(env).variable ?? (name === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY');
  return `provider: ${name} (${variable} is set)`;
}
