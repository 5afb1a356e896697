/**
 * Model settings: how a model samples and how much it may say or think. One provider-neutral set,
 * written in definitions, model-settings blocks, spawn options, plans and on the command line,
 * checked by one reader, merged by one rule and mapped to each API by its provider.
 */
import { describeValue, UserError } from '../errors.ts';
import { MAX_STOP_SEQUENCE_CHARS, MAX_STOP_SEQUENCES } from './constants.ts';

/** How hard a reasoning model thinks; which values a provider accepts is the provider's call. */
export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/**
 * Sampling and output settings of a model request. Every key is optional: an unset key is not
 * sent, so the provider's (or the server's) default applies. See docs/definitions.md, "Model
 * settings", for how each provider sends them.
 */
export interface ModelSettings {
  /** Sampling temperature, 0-2 (Anthropic accepts 0-1). */
  readonly temperature?: number;
  /** Nucleus sampling: the smallest set of tokens whose probability reaches `topP`, in (0, 1]. */
  readonly topP?: number;
  /** Sample from the `topK` most likely tokens (Anthropic only). */
  readonly topK?: number;
  /** Output tokens one model request may produce (thinking budgets come on top for Anthropic). */
  readonly maxOutputTokens?: number;
  /** How hard a reasoning model thinks (OpenAI `reasoning_effort`, Anthropic `thinking` budget). */
  readonly reasoningEffort?: ReasoningEffort;
  /** Sequences that end the answer when generated (at most {@link MAX_STOP_SEQUENCES}). */
  readonly stop?: readonly string[];
  /** Seed for best-effort deterministic sampling (OpenAI-compatible servers). */
  readonly seed?: number;
  /** Penalty, -2 to 2, on tokens that appeared at all (OpenAI-compatible servers only). */
  readonly presencePenalty?: number;
  /** Penalty, -2 to 2, on tokens by how often they appeared (OpenAI-compatible servers only). */
  readonly frequencyPenalty?: number;
}

/** The keys of {@link ModelSettings}, in the order docs and output list them. */
export const MODEL_SETTING_KEYS = [
  'temperature',
  'topP',
  'topK',
  'maxOutputTokens',
  'reasoningEffort',
  'stop',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
] as const satisfies readonly (keyof ModelSettings)[];

/** Every reasoning effort a provider may accept (which ones it does is the provider's call). */
export const REASONING_EFFORTS: readonly ReasoningEffort[] = [
  'none',
  'minimal',
  'low',
  'medium',
  'high',
  'xhigh',
  'max',
];

/** One thing wrong with a model-settings value; `path` is relative to the settings object. */
export interface ModelSettingsProblem {
  readonly path: readonly (string | number)[];
  /** `unknown`: a key that is not a model setting (a warning in definitions, else an error). */
  readonly kind: 'invalid' | 'unknown';
  readonly message: string;
}

/** What {@link readModelSettings} found: the settings it could read and what was wrong. */
export interface ModelSettingsReading {
  readonly settings: ModelSettings;
  readonly problems: readonly ModelSettingsProblem[];
}

interface NumberRule {
  /** No lower bound when absent. */
  readonly min?: number;
  readonly max?: number;
  /** `min` itself is not allowed (`topP` > 0). */
  readonly exclusiveMin?: boolean;
  readonly integer?: boolean;
}

const NUMBER_RULES: Readonly<Record<string, NumberRule>> = {
  temperature: { min: 0, max: 2 },
  topP: { min: 0, max: 1, exclusiveMin: true },
  topK: { min: 1, integer: true },
  maxOutputTokens: { min: 1, integer: true },
  seed: { integer: true },
  presencePenalty: { min: -2, max: 2 },
  frequencyPenalty: { min: -2, max: 2 },
};

/**
 * Reads model settings from untrusted data (YAML, JSON, options). Never throws: each key it cannot
 * use is a problem and is left out. `ignore` names keys that belong to the caller (a block
 * reference's `id` and `version`) and are neither read nor reported.
 */
export function readModelSettings(value: unknown, ignore: readonly string[] = []): ModelSettingsReading {
  const problems: ModelSettingsProblem[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({
      path: [],
      kind: 'invalid',
      message: `Expected model settings (a mapping such as \`{ temperature: 0.2 }\`), got ${describeValue(value)}`,
    });
    return { settings: {}, problems };
  }
  const settings: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (ignore.includes(key) || item === undefined || item === null) continue;
    const problem = settingProblem(key, item);
    if (problem === undefined) settings[key] = key === 'stop' && typeof item === 'string' ? [item] : item;
    else problems.push(problem);
  }
  return { settings: settings as ModelSettings, problems };
}

function settingProblem(key: string, value: unknown): ModelSettingsProblem | undefined {
  const invalid = (expected: string, path: (string | number)[] = [key]): ModelSettingsProblem => ({
    path,
    kind: 'invalid',
    message: `Expected \`${key}\` to be ${expected}, got ${describeValue(value)}`,
  });
  const rule = NUMBER_RULES[key];
  if (rule !== undefined) {
    const ok =
      typeof value === 'number' &&
      Number.isFinite(value) &&
      (rule.min === undefined || (rule.exclusiveMin ? value > rule.min : value >= rule.min)) &&
      (rule.max === undefined || value <= rule.max) &&
      (!rule.integer || Number.isSafeInteger(value));
    return ok ? undefined : invalid(describeRule(rule));
  }
  if (key === 'reasoningEffort') {
    return REASONING_EFFORTS.includes(value as ReasoningEffort)
      ? undefined
      : invalid(`one of ${REASONING_EFFORTS.map((effort) => `\`${effort}\``).join(', ')}`);
  }
  if (key === 'stop') {
    const list = typeof value === 'string' ? [value] : value;
    const expected = `a stop sequence or a list of at most ${MAX_STOP_SEQUENCES} non-empty strings of at most ${MAX_STOP_SEQUENCE_CHARS} characters`;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_STOP_SEQUENCES)
      return invalid(expected);
    const bad = list.findIndex(
      (item: unknown) => typeof item !== 'string' || item === '' || item.length > MAX_STOP_SEQUENCE_CHARS,
    );
    return bad === -1 ? undefined : invalid(expected, typeof value === 'string' ? [key] : [key, bad]);
  }
  const known = MODEL_SETTING_KEYS.find(
    (name) => name.toLowerCase() === key.replaceAll(/[-_]/g, '').toLowerCase(),
  );
  return {
    path: [key],
    kind: 'unknown',
    message: `Unknown model setting \`${key}\`${known === undefined ? '' : ` (did you mean \`${known}\`?)`}; known: ${MODEL_SETTING_KEYS.join(', ')}`,
  };
}

function describeRule(rule: NumberRule): string {
  const noun = rule.integer ? 'an integer' : 'a number';
  if (rule.min === undefined) return `${noun} (a safe integer)`;
  if (rule.max === undefined)
    return rule.min === 1 ? `a positive ${rule.integer ? 'integer' : 'number'}` : `${noun} >= ${rule.min}`;
  return rule.exclusiveMin
    ? `${noun} greater than ${rule.min} and at most ${rule.max}`
    : `${noun} from ${rule.min} to ${rule.max}`;
}

/**
 * Checks model settings given in code (a Supervisor option, a spawn, `runAgent`) and returns them
 * with stop sequences as a list. Throws UserError `invalid_option` (fields `option`, `problems`)
 * naming every problem, unknown keys included: in code they are typos.
 */
export function prepareModelSettings(value: unknown, option: string): ModelSettings {
  if (value === undefined) return {};
  const { settings, problems } = readModelSettings(value);
  if (problems.length === 0) return settings;
  const lines = problems.map((problem) =>
    problem.path.length === 0 ? problem.message : `${option}.${problem.path.join('.')}: ${problem.message}`,
  );
  throw new UserError('invalid_option', `Invalid \`${option}\`: ${lines.join('; ')}`, {
    option,
    problems: problems.map(({ path, message }) => ({ path, message })),
  });
}

/**
 * Merges layers of settings, lowest precedence first: a key set in a later layer replaces the
 * same key of an earlier one, key by key (`stop` is replaced as a whole, not appended to).
 */
export function mergeModelSettings(...layers: readonly (ModelSettings | undefined)[]): ModelSettings {
  const merged: Record<string, unknown> = {};
  for (const layer of layers) {
    if (layer === undefined) continue;
    for (const [key, value] of Object.entries(layer)) if (value !== undefined) merged[key] = value;
  }
  // Keys in one order whatever the layers', so equal settings print (and journal) alike.
  const ordered: Record<string, unknown> = {};
  for (const key of MODEL_SETTING_KEYS) if (merged[key] !== undefined) ordered[key] = merged[key];
  return ordered as ModelSettings;
}

/** True when no setting is set. */
export function isEmptyModelSettings(settings: ModelSettings | undefined): boolean {
  return settings === undefined || Object.values(settings).every((value) => value === undefined);
}

/** Why a provider does not send a setting as given. */
export interface ModelSettingIssue {
  readonly setting: keyof ModelSettings;
  /**
   * `unsupported`: the request cannot be sent as asked, so the agent fails before its first
   * request; `dropped`: the setting is not sent (harmless to leave out), and the Started event
   * says so in `notices`.
   */
  readonly kind: 'unsupported' | 'dropped';
  readonly message: string;
}
