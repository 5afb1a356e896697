/**
 * Model names as definitions write them -> the model id a provider is asked for. Claude Code files
 * say `model: sonnet | opus | haiku | inherit`; providers need ids (`claude-sonnet-4-6`). One
 * function, {@link resolveModel}, decides for every path (`troupe run`, both Supervisor engines,
 * plans), so the id that is sent is also the one journalled, priced and shown.
 */
import { describeValue, UserError } from '../errors.ts';
import { DEFAULT_MODELS } from './constants.ts';

/** Alias (or any model name) -> model id. */
export type ModelMap = Readonly<Record<string, string>>;

/** Which family of provider a model is for: the built-in alias table differs per family. */
export type ModelProviderKind = 'openai' | 'anthropic' | 'simulated' | 'module';

/**
 * Claude Code's aliases on Anthropic: the newest model of each tier, as of 2026-04 (Claude Opus
 * 4.7, Sonnet 4.6, Haiku 4.5). Override with `modelMap` (Supervisor option, plan file, or
 * `--model-map sonnet=<id>`) to pin another version.
 */
export const ANTHROPIC_MODEL_ALIASES: ModelMap = {
  opus: 'claude-opus-4-7',
  sonnet: 'claude-sonnet-4-6',
  haiku: 'claude-haiku-4-5',
  opusplan: 'claude-opus-4-7',
};

/**
 * The same aliases on OpenAI-compatible servers, by tier: the flagship for opus and sonnet, the
 * small model for haiku. Local servers (Ollama, vLLM, llama.cpp) name their models otherwise:
 * map the aliases to them with `modelMap`.
 */
export const OPENAI_MODEL_ALIASES: ModelMap = {
  opus: 'gpt-5',
  sonnet: 'gpt-5',
  haiku: 'gpt-5-mini',
  opusplan: 'gpt-5',
};

/** Built-in alias tables by provider family. */
export const MODEL_ALIASES: Readonly<Record<ModelProviderKind, ModelMap>> = {
  anthropic: ANTHROPIC_MODEL_ALIASES,
  openai: OPENAI_MODEL_ALIASES,
  simulated: {},
  module: {},
};

/** What a model is resolved from. */
export interface ModelRequest {
  /** The provider's family (its `kind`). */
  readonly kind: ModelProviderKind;
  /** The provider's name in the run (`providers` key), for `name:alias` entries of `modelMap`. */
  readonly provider?: string;
  /** Asked for explicitly (`--model`, a spawn's `model`); wins over the definition. */
  readonly requested?: string;
  /** The definition's `model`, as written. @default 'default' */
  readonly definitionModel?: string;
  /** The resolved model of the agent that spawned this one (for `inherit`). */
  readonly parentModel?: string;
  /** The run's default model (may itself be an alias, or `default`). @default 'default' */
  readonly defaultModel?: string;
  /** Aliases added or overridden: `alias` for every provider, `provider:alias` for one. */
  readonly modelMap?: ModelMap;
}

/** A resolved model and how it was found. */
export interface ResolvedModel {
  /** The id sent to the provider. */
  readonly id: string;
  /** The name it was resolved from (`sonnet`, `inherit`, `gpt-4.1`). */
  readonly from: string;
  /** Where that name came from. */
  readonly source: 'requested' | 'definition' | 'parent' | 'default';
}

/**
 * Resolves the model of one agent:
 * 1. `requested`, else the definition's model;
 * 2. `inherit` takes the parent's resolved model, else the run's default; `default` takes the
 *    run's default, else the provider's default model (`DEFAULT_MODELS`);
 * 3. an alias is looked up in `modelMap` (`provider:alias`, then `alias`), then in the provider
 *    family's table ({@link MODEL_ALIASES}); display names such as `Claude Sonnet 4.5` become ids
 *    (`claude-sonnet-4-5`, see {@link displayNameId}); anything else is an id already and is kept.
 * The simulated provider runs no real model: unless a model is requested, it gets `simulated`.
 */
export function resolveModel(request: ModelRequest): ResolvedModel {
  const written = request.requested ?? request.definitionModel ?? 'default';
  let source: ResolvedModel['source'] = request.requested === undefined ? 'definition' : 'requested';
  if (request.kind === 'simulated' && request.requested === undefined) {
    return { id: DEFAULT_MODELS.simulated, from: written, source };
  }
  let name = written.trim();
  if (name.toLowerCase() === 'inherit') {
    if (request.parentModel !== undefined)
      return { id: request.parentModel, from: written, source: 'parent' };
    name = 'default';
  }
  if (name.toLowerCase() === 'default') {
    source = 'default';
    name = (request.defaultModel ?? 'default').trim();
    if (name.toLowerCase() === 'default' || name.toLowerCase() === 'inherit') {
      const fallback = request.kind === 'module' ? undefined : DEFAULT_MODELS[request.kind];
      return { id: fallback ?? 'default', from: written, source };
    }
  }
  return { id: lookupAlias(name, request), from: written, source };
}

function lookupAlias(name: string, request: ModelRequest): string {
  const key = name.toLowerCase();
  const map = request.modelMap ?? {};
  const scoped = [request.provider, request.kind].filter((scope) => scope !== undefined);
  for (const scope of scoped) {
    const hit = findKey(map, `${scope}:${key}`);
    if (hit !== undefined) return hit;
  }
  const general = findKey(map, key);
  if (general !== undefined) return general;
  const builtin = findKey(MODEL_ALIASES[request.kind], key);
  if (builtin !== undefined) return builtin;
  return displayNameId(name) ?? name;
}

/**
 * The id of a display name as pickers show them: `Claude Sonnet 4.5` -> `claude-sonnet-4-5`; VS
 * Code agent files add the vendor, `Claude Sonnet 4.5 (copilot)`. Undefined for anything else.
 */
export function displayNameId(name: string): string | undefined {
  const display = /^claude\s+(opus|sonnet|haiku)\s+(\d+(?:\.\d+)*)(?:\s*\([^()]*\))?$/i.exec(name.trim());
  if (!display) return undefined;
  return `claude-${(display[1] ?? '').toLowerCase()}-${(display[2] ?? '').replaceAll('.', '-')}`;
}

function findKey(map: ModelMap, key: string): string | undefined {
  for (const [alias, id] of Object.entries(map)) {
    if (alias.toLowerCase() === key) return id;
  }
  return undefined;
}

/**
 * Reads `alias=id` entries (`--model-map sonnet=claude-sonnet-4-5`, `openai:haiku=gpt-5-nano`) or
 * validates a map given as an object. Throws UserError `invalid_option` naming the bad entry.
 */
export function parseModelMap(
  value: readonly string[] | Readonly<Record<string, unknown>>,
  option = 'modelMap',
): ModelMap {
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((entry) => {
        const at = entry.indexOf('=');
        if (at <= 0 || at === entry.length - 1) {
          throw new UserError(
            'invalid_option',
            `Expected \`${option}\` entries as alias=model (e.g. sonnet=claude-sonnet-4-6), got ${describeValue(entry)}`,
            { option },
          );
        }
        return [entry.slice(0, at).trim(), entry.slice(at + 1).trim()];
      })
    : Object.entries(value);
  const map: Record<string, string> = {};
  for (const [alias, id] of entries) {
    if (typeof id !== 'string' || id.trim() === '' || alias.trim() === '') {
      throw new UserError(
        'invalid_option',
        `Expected \`${option}.${alias}\` to be a model id, got ${describeValue(id)}`,
        { option: `${option}.${alias}` },
      );
    }
    map[alias.trim()] = id.trim();
  }
  return map;
}
