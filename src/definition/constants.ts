/** Defaults and vocabularies of agent definition files. Shared defaults live in ../constants.ts. */

/** Model used when a definition does not name one; resolved by the provider layer. */
export const DEFAULT_MODEL = 'default';

/**
 * Largest definition file read. Real definitions are a few KB (the largest in the corpus is 64
 * KB); the cap keeps a stray binary or log file in an agents dir from stalling discovery.
 */
export const DEFINITION_BYTE_LIMIT = 1_048_576;

/**
 * Largest frontmatter read, in characters. The largest in the corpus is 5 KB. The `yaml` parser's
 * duplicate-key check is quadratic (seconds at a few hundred KB), so the cap also bounds its time.
 */
export const MAX_FRONTMATTER_CHARS = 65_536;

/** Deepest `[ ]`/`{ }` nesting accepted in frontmatter (see yaml-read.ts). */
export const MAX_FLOW_NESTING = 64;

/** At most this many YAML syntax errors are reported per file: later ones are mostly echoes. */
export const MAX_YAML_ERRORS = 20;

/** Alias expansion cap while converting YAML to values (guards against "billion laughs" input). */
export const MAX_YAML_ALIAS_COUNT = 100;

/**
 * At most this many agent names are listed in an `unknown_agent` message (the error's `available`
 * field keeps them all): a project with a few hundred agents made a typo a 5 KB line.
 */
export const UNKNOWN_AGENT_LISTED_NAMES = 20;

/** Agent names: lowercase letters and digits, in groups joined by single `-`, `_` or `.`. */
export const NAME_PATTERN = /^[a-z0-9]+(?:[-_.][a-z0-9]+)*$/;

/** Model-facing tool and parameter names that OpenAI and Anthropic both accept. */
export const MODEL_FACING_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Top-level keys troupe understands. */
export const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'name',
  'description',
  'promptMode',
  'tools',
  'disallowedTools',
  'permissionMode',
  'permissions',
  'skills',
  'agentsMd',
  'outputFormat',
  'bash',
  'toolNameOverrides',
  'paramNameOverrides',
  'completionRequirement',
  'toolConfig',
  'model',
  'maxSteps',
  'maxTurns',
  'enabled',
  'outputSchema',
  'mcpServers',
  'instructions',
  'settings',
  'modelSettings',
]);

/**
 * Keys that only affect how other tools display an agent (Claude Code, agent catalogues). They are
 * accepted without a warning and kept in `extra`.
 */
export const DISPLAY_KEYS: ReadonlySet<string> = new Set([
  'color',
  'colour',
  'emoji',
  'icon',
  'vibe',
  'displayName',
  'category',
  'tags',
  'author',
  'version',
]);

/** The reminder used when `completionRequirement` names a tool but gives no reminder. */
export function defaultCompletionReminder(tool: string): string {
  return `You have not called \`${tool}\` yet. Your task is not finished until you call \`${tool}\` with your result.`;
}
