/** Builds providers by name, and picks the default one from the environment. */
import { describeValue, UserError } from '../errors.ts';
import { AnthropicProvider, type AnthropicProviderOptions, checkAnthropicOptions } from './anthropic.ts';
import { providerFromEnvironment } from './environment.ts';
import { checkOpenAIOptions, OpenAIProvider, type OpenAIProviderOptions } from './openai.ts';
import { checkSimulatedOptions, SimulatedProvider, type SimulatedProviderOptions } from './simulated.ts';
import type { Provider } from './types.ts';

/** Providers {@link createProvider} can build. */
export type ProviderName = 'openai' | 'anthropic' | 'simulated';

/** Options by provider name. */
export interface ProviderOptionsByName {
  readonly openai: OpenAIProviderOptions;
  readonly anthropic: AnthropicProviderOptions;
  readonly simulated: SimulatedProviderOptions;
}

/** The names {@link createProvider} accepts. */
export const PROVIDER_NAMES: readonly ProviderName[] = ['openai', 'anthropic', 'simulated'];

/**
 * Builds the provider called `name`. Options are validated here (a UserError `invalid_option`
 * names the bad one); `openai` and `anthropic` also read their key and base URL from the
 * environment and fail with `missing_api_key` when the official endpoint has no key.
 */
export function createProvider<N extends ProviderName>(name: N, options?: ProviderOptionsByName[N]): Provider;
export function createProvider(name: string, options?: Readonly<Record<string, unknown>>): Provider;
export function createProvider(name: string, options: object = {}): Provider {
  switch (name) {
    case 'openai':
      return new OpenAIProvider(options);
    case 'anthropic':
      return new AnthropicProvider(options);
    case 'simulated':
      return new SimulatedProvider(options);
    default:
      throw new UserError(
        'unknown_provider',
        `Expected a provider name (${PROVIDER_NAMES.join(', ')}), got ${describeValue(name)}.`,
        { provider: name },
      );
  }
}

/**
 * Checks the options of the provider called `name` without building it (so without its key):
 * UserError `invalid_option` (fields `provider`, `option`) for a value of the wrong type or range.
 */
export function checkProviderOptions(name: ProviderName, options: object = {}): void {
  if (name === 'openai') checkOpenAIOptions(options);
  else if (name === 'anthropic') checkAnthropicOptions(options);
  else checkSimulatedOptions(options);
}

/**
 * The provider to use when none is named: `openai` when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is
 * set, else `anthropic` when `ANTHROPIC_API_KEY` is set, else `simulated` (see
 * {@link providerFromEnvironment}, which also says which variable decided).
 */
export function defaultProviderName(
  env: Readonly<Record<string, string | undefined>> = process.env,
): ProviderName {
  return providerFromEnvironment(env).name;
}
