/**
 * Which provider a run uses: `--provider`, else the plan's `provider`, else the environment
 * (`OPENAI_API_KEY`/`OPENAI_BASE_URL` -> openai, `ANTHROPIC_API_KEY` -> anthropic), else the
 * simulated model. The choice is checked in the main thread before any agent starts, so a missing
 * key fails the command instead of every agent.
 */
import { basename, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeValue, UserError } from '../errors.ts';
import { importModule } from '../module-import.ts';
import type { ProviderConfig } from '../protocol/messages.ts';
import { DEFAULT_MODELS } from '../providers/constants.ts';
import {
  providerFromEnvironment,
  REAL_PROVIDER_HINT,
  SIMULATED_FALLBACK_REASON,
} from '../providers/environment.ts';
import { createProvider, PROVIDER_NAMES } from '../providers/factory.ts';
import type { ProviderModuleRef } from './plan-types.ts';

/** The provider a run uses, as recorded in `plan.json`. */
export interface ProviderChoice {
  /** Provider key: `simulated`, `openai`, `anthropic`, or a module's file name. */
  readonly name: string;
  readonly config: ProviderConfig;
  /** True when answers come from the simulated model (no real model is called). */
  readonly simulated: boolean;
  /** What decided it (`demo`: `troupe demo`, which always runs on the simulated model). */
  readonly source: 'flag' | 'plan' | 'env' | 'default' | 'demo';
}

/** Why the simulated model answers, and how to get a real one. */
export const SIMULATED_REASON = `${SIMULATED_FALLBACK_REASON} (${REAL_PROVIDER_HINT}, or pass --provider, for a real model)`;

/** What every output says when the simulated model answers. */
export const SIMULATED_NOTICE = `using the simulated model: ${SIMULATED_REASON}`;

/**
 * Why the simulated model answers, by what chose it: only the default is for want of an API key
 * (`--provider simulated` with a key set is a choice, not a fallback).
 */
export function simulatedReason(source: ProviderChoice['source'] | undefined): string {
  const canned = "answers are canned, not a real model's";
  if (source === 'flag') return `--provider simulated was given, so ${canned}`;
  if (source === 'plan') return `the plan's provider is simulated, so ${canned}`;
  if (source === 'demo') return `troupe demo always runs on it, whatever API key is set, so ${canned}`;
  return SIMULATED_REASON;
}

/** {@link SIMULATED_NOTICE} for a provider chosen by `source`. */
export function simulatedNotice(source: ProviderChoice['source'] | undefined): string {
  return `using the simulated model: ${simulatedReason(source)}`;
}

/**
 * What a report of a past run says of its simulated model: that the run used it, and why, in the
 * past tense (a report calls no model, and the keys set now say nothing about the run).
 */
export function simulatedRunNotice(source: ProviderChoice['source'] | undefined): string {
  const canned = "its answers are canned, not a real model's";
  const why =
    source === 'flag'
      ? '--provider simulated was given'
      : source === 'plan'
        ? "its plan's provider is simulated"
        : source === 'demo'
          ? 'troupe demo always runs on it'
          : 'no API key was set when it ran';
  return `this run used the simulated model: ${why}, so ${canned}`;
}

/** Inputs of {@link chooseProvider}. */
export interface ProviderInputs {
  /** `--provider`. */
  readonly flag?: string;
  readonly plan?: string | ProviderModuleRef;
  readonly options?: Readonly<Record<string, unknown>>;
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Picks the provider. Throws UserError `unknown_provider` for a `--provider` value troupe does not know. */
export function chooseProvider(inputs: ProviderInputs): ProviderChoice {
  const options = inputs.options === undefined ? {} : { options: inputs.options };
  if (inputs.flag !== undefined) {
    if (!(PROVIDER_NAMES as readonly string[]).includes(inputs.flag)) {
      throw new UserError(
        'unknown_provider',
        `Expected --provider to be one of ${PROVIDER_NAMES.join(', ')}, got ${describeValue(inputs.flag)}`,
        { provider: inputs.flag },
      );
    }
    return named(inputs.flag, 'flag', options);
  }
  if (typeof inputs.plan === 'string') return named(inputs.plan, 'plan', options);
  if (inputs.plan !== undefined) {
    const module = resolve(inputs.plan.module);
    return {
      name: basename(module, extname(module)),
      config: {
        kind: 'module',
        module,
        ...(inputs.plan.export === undefined ? {} : { export: inputs.plan.export }),
        ...options,
      },
      simulated: false,
      source: 'plan',
    };
  }
  const fromEnv = providerFromEnvironment(inputs.env ?? process.env).name;
  return named(fromEnv, fromEnv === 'simulated' ? 'default' : 'env', options);
}

function named(
  name: string,
  source: ProviderChoice['source'],
  options: { options?: Readonly<Record<string, unknown>> },
): ProviderChoice {
  const kind = name as 'simulated' | 'openai' | 'anthropic';
  return { name, config: { kind, ...options }, simulated: kind === 'simulated', source };
}

/** The variable that points a built-in provider at another server. */
const BASE_URL_VARIABLES: Readonly<Record<string, string>> = {
  openai: 'OPENAI_BASE_URL',
  anthropic: 'ANTHROPIC_BASE_URL',
};

/**
 * The choice with the base URL this process's environment gives a built-in provider written into
 * its options, for agents run by other processes (`--backend redis`): a worker reads its own
 * environment, where the variable may be unset, and would send the run's requests, meant for a
 * local server, to the official endpoint with its own key. Keys stay out (each worker reads its
 * own), and so does a URL with credentials in it (it would be stored in Redis).
 */
export function withEnvironmentBaseURL(
  choice: ProviderChoice,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ProviderChoice {
  const { config } = choice;
  const variable = BASE_URL_VARIABLES[config.kind];
  if (variable === undefined || config.kind === 'module') return choice;
  const baseURL = env[variable]?.trim();
  if (!baseURL || baseURL.includes('@') || config.options?.baseURL !== undefined) return choice;
  return { ...choice, config: { ...config, options: { ...config.options, baseURL } } };
}

/**
 * Builds the chosen provider once in the main thread (no request is made) so a missing API key or
 * a bad option fails before anything runs; a module provider is imported and its factory checked.
 */
export async function checkProvider(choice: ProviderChoice): Promise<void> {
  const { config } = choice;
  if (config.kind !== 'module') {
    createProvider(config.kind, config.options ?? {});
    return;
  }
  const url = config.module.startsWith('file:') ? config.module : pathToFileURL(config.module).href;
  const mod = await importModule(url);
  const name = config.export ?? 'default';
  if (typeof mod[name] !== 'function') {
    throw new UserError(
      'invalid_provider_module',
      `Expected ${config.module} to export a provider factory \`${name}\`, got ${describeValue(mod[name])}`,
      { module: config.module, export: name },
    );
  }
}

/** The model a provider uses when neither the plan, `--model` nor the definition names one. */
export function defaultModelFor(choice: ProviderChoice): string | undefined {
  const kind = choice.config.kind;
  return kind === 'module' ? undefined : DEFAULT_MODELS[kind];
}
