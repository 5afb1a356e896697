/**
 * Which provider the environment selects when none is named: the one rule the CLI (`troupe run`,
 * `fanout`) and the library (`new Supervisor()` without `providers`) both follow.
 * `OPENAI_API_KEY` or `OPENAI_BASE_URL` (any OpenAI-compatible server) selects `openai`, else
 * `ANTHROPIC_API_KEY` selects `anthropic`, else the simulated model answers, and whoever falls
 * back to it says so: nobody should mistake its answers for a real model's.
 */
import { envValue } from './options.ts';

/** Environment variables, as `process.env` holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The provider the environment selects, and why. */
export interface EnvironmentProvider {
  readonly name: 'openai' | 'anthropic' | 'simulated';
  /** The variable that selected it; undefined when nothing did and the simulated model answers. */
  readonly variable: 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'ANTHROPIC_API_KEY' | undefined;
}

/** The provider `env` selects (see the module comment). Blank values count as unset. */
export function providerFromEnvironment(env: Env = process.env): EnvironmentProvider {
  if (envValue(env, 'OPENAI_API_KEY') !== undefined) return { name: 'openai', variable: 'OPENAI_API_KEY' };
  if (envValue(env, 'OPENAI_BASE_URL') !== undefined) return { name: 'openai', variable: 'OPENAI_BASE_URL' };
  if (envValue(env, 'ANTHROPIC_API_KEY') !== undefined)
    return { name: 'anthropic', variable: 'ANTHROPIC_API_KEY' };
  return { name: 'simulated', variable: undefined };
}

/** Why the simulated model answers when the environment names no provider. */
export const SIMULATED_FALLBACK_REASON = "no API key is set, so answers are canned, not a real model's";

/** What selects a real model instead. */
export const REAL_PROVIDER_HINT = 'set OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY';

/** The warning a program gets when the library falls back to the simulated model. */
export const SIMULATED_FALLBACK_WARNING =
  `troupe is using the simulated model: ${SIMULATED_FALLBACK_REASON} ` +
  `(${REAL_PROVIDER_HINT}, or pass \`providers\` to the Supervisor, for a real model)`;

/** `code` of that warning, e.g. for `node --disable-warning=TROUPE_SIMULATED_MODEL`. */
export const SIMULATED_FALLBACK_WARNING_CODE = 'TROUPE_SIMULATED_MODEL';

let warned = false;

/** Emits {@link SIMULATED_FALLBACK_WARNING} as a process warning, once per process. */
export function warnSimulatedFallback(): void {
  if (warned) return;
  warned = true;
  process.emitWarning(SIMULATED_FALLBACK_WARNING, {
    type: 'TroupeWarning',
    code: SIMULATED_FALLBACK_WARNING_CODE,
  });
}
