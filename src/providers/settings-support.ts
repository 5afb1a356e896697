/**
 * Which model settings a provider can send: settings it cannot send as asked fail before anything
 * is sent, with the same message whether the loop asks up front or a turn is started directly.
 */
import type { ProviderError } from '../errors.ts';
import { SUPPORTED_REASONING_EFFORTS } from './constants.ts';
import type { ModelSettingIssue, ModelSettings, ReasoningEffort } from './model-settings.ts';
import { providerError } from './provider-error.ts';

/** An `unsupported` issue when `effort` is set and `kind` has no mapping for it. */
export function reasoningEffortIssue(
  kind: keyof typeof SUPPORTED_REASONING_EFFORTS,
  provider: string,
  effort: ReasoningEffort | undefined,
): ModelSettingIssue | undefined {
  const supported = SUPPORTED_REASONING_EFFORTS[kind];
  if (effort === undefined || supported.includes(effort)) return undefined;
  return {
    setting: 'reasoningEffort',
    kind: 'unsupported',
    message: `Expected \`reasoningEffort\` to be one of ${supported.join(', ')} for ${provider}, got ${JSON.stringify(effort)}.`,
  };
}

/**
 * The `bad_request` a turn fails with before sending, for the first `unsupported` issue; undefined
 * when every setting can be sent (dropped ones are simply not sent). Fields: the setting and its
 * value (`{ reasoningEffort: 'max' }`), plus `supported` efforts for a reasoning effort.
 */
export function settingsPreflightError(
  kind: keyof typeof SUPPORTED_REASONING_EFFORTS,
  provider: string,
  settings: ModelSettings,
  issues: readonly ModelSettingIssue[],
): ProviderError | undefined {
  const issue = issues.find((candidate) => candidate.kind === 'unsupported');
  if (issue === undefined) return undefined;
  return providerError(
    'bad_request',
    issue.message,
    { provider },
    {
      setting: issue.setting,
      [issue.setting]: settings[issue.setting],
      ...(issue.setting === 'reasoningEffort' ? { supported: SUPPORTED_REASONING_EFFORTS[kind] } : {}),
    },
  );
}
