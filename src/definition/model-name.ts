/**
 * A definition's `model`: a Claude Code alias, `inherit`, `default` or a provider's model id. An id
 * troupe's tables do not know is normal (providers ship models faster than troupe), so only a name
 * that cannot be an id gets a warning: a bare word (`fable`, `sonet`), or one with spaces that is no
 * display name. Such a name is sent to the provider as written and fails (or, on the simulated
 * provider, is silently replaced) only when the agent runs.
 */
import { DEFAULT_MODELS } from '../providers/constants.ts';
import { displayNameId, MODEL_ALIASES } from '../providers/models.ts';
import { type FieldContext, readString, suggestion } from './fields.ts';

/** What `model` takes besides aliases and ids. */
const KEYWORDS = ['inherit', 'default'] as const;

/**
 * Shaped like a model id: no spaces, and a digit or a separator somewhere (`claude-sonnet-4-6`,
 * `gpt-5`, `o3`, `qwen3:8b`, `openai/gpt-4o`, `mistral-large-latest`).
 */
const ID_SHAPE = /^\S*[\d._:/@-]\S*$/;

/** Every built-in alias, any provider family, then `inherit` and `default`: what a name may be. */
const NAMES: readonly string[] = [
  ...new Set(Object.values(MODEL_ALIASES).flatMap((table) => Object.keys(table))),
  ...KEYWORDS,
];

/** Those and the providers' default models, lowercase: names that need no checking. */
const KNOWN = new Set([...NAMES, ...Object.values(DEFAULT_MODELS)].map((name) => name.toLowerCase()));

/** Whether the trimmed `name` is no known name, display name or id-shaped string (checked per spawn). */
function cannotNameModel(name: string): boolean {
  return !ID_SHAPE.test(name) && !KNOWN.has(name.toLowerCase()) && displayNameId(name) === undefined;
}

/** Reads `model` (a non-empty string), with an `unknown_model` warning when it cannot name a model. */
export function readModel(ctx: FieldContext, value: unknown): string | undefined {
  const model = readString(ctx, ['model'], value);
  if (model === undefined) return undefined;
  const message = unknownModelMessage(model);
  if (message !== undefined) {
    ctx.problems.warning('unknown_model', message, ctx.data.valueAt(['model']), ['model']);
  }
  return model;
}

/**
 * Whether `model` cannot name a model and is one edit from an alias or keyword (`sonet`, `hiaku`):
 * a typo, where a bare word far from every alias (`mistral`, `qwen`, `mock`) is more likely a local
 * server's or a provider module's own model name. What a run warns about on every spawn.
 */
export function likelyAliasTypo(model: string): boolean {
  const name = model.trim();
  return cannotNameModel(name) && suggestion(name, NAMES) !== '';
}

/**
 * Why `model` is neither `inherit`, `default`, a built-in alias, a display name (`Claude Sonnet
 * 4.5`) nor shaped like a model id, with the forms it may take and a likely meant alias; undefined
 * when it is one of those.
 * @param subject what gave the name, as the message starts: "Expected SUBJECT to be ...".
 */
export function unknownModelMessage(model: string, subject = '`model`'): string | undefined {
  const name = model.trim();
  if (!cannotNameModel(name)) return undefined;
  const forms = `an alias (${NAMES.map((alias) => `\`${alias}\``).join(', ')}) or a full model id (\`claude-sonnet-4-6\`, \`gpt-5\`)`;
  const why = /\s/.test(name) ? 'a model id has no spaces' : 'no alias troupe knows';
  return `Expected ${subject} to be ${forms}, found \`${name}\`${suggestion(name, NAMES)}: ${why}; it is sent to the provider as written unless a \`modelMap\` maps it`;
}
