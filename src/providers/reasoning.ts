/** Which reasoning efforts a provider accepts: unsupported values fail before anything is sent. */
import type { ProviderError } from '../errors.ts';
import { SUPPORTED_REASONING_EFFORTS } from './constants.ts';
import { providerError } from './provider-error.ts';
import type { ReasoningEffort } from './types.ts';

/** A `bad_request` error when `effort` is set and not supported by `kind`, else undefined. */
export function reasoningEffortError(
  kind: keyof typeof SUPPORTED_REASONING_EFFORTS,
  provider: string,
  effort: ReasoningEffort | undefined,
): ProviderError | undefined {
  const supported = SUPPORTED_REASONING_EFFORTS[kind];
  if (effort === undefined || supported.includes(effort)) return undefined;
  return providerError(
    'bad_request',
    `Expected \`reasoningEffort\` to be one of ${supported.join(', ')} for ${provider}, got ${JSON.stringify(effort)}.`,
    { provider },
    { reasoningEffort: effort, supported },
  );
}
