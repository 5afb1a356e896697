/** The tool registry: every tool an agent could be given, by canonical name. */
import { UserError } from '../errors.ts';
import { compileOwnSchema, compileSchema, type SchemaValidator } from './schema.ts';
import type { Tool } from './types.ts';

/** Provider-safe tool and parameter names (OpenAI and Anthropic both accept this set). */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

interface Entry {
  readonly tool: Tool;
  /** Undefined for a built-in tool until its first validation. */
  validate: SchemaValidator | undefined;
}

/** Parameter schemas of troupe's own tools (see {@link markBuiltinTools}). */
const BUILTIN_SCHEMAS = new WeakSet<object>();

/**
 * Marks troupe's built-in tools (by their parameter schema, which copies of a tool share): their
 * schemas are compiled on their first call instead of at registration, without the meta-schema
 * check (test/tools/registry.test.ts makes it for every one). An actor-host thread registers all
 * of them at its start and an agent calls few: compiling them all, and the meta-schema first, was
 * 100-400 ms of every thread's start.
 */
export function markBuiltinTools(tools: Iterable<Pick<Tool, 'parameters'>>): void {
  for (const tool of tools) BUILTIN_SCHEMAS.add(tool.parameters);
}

/**
 * Tools by canonical name. Each tool's parameter schema is compiled once, when it is registered, so
 * a broken schema fails there rather than at the model's first call (built-in tools: on first use,
 * see {@link markBuiltinTools}).
 */
export class ToolRegistry {
  readonly #entries = new Map<string, Entry>();

  /** Creates a registry holding `tools` (see {@link ToolRegistry.register}). */
  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  /**
   * Adds a tool. Throws UserError `invalid_tool` for a name providers would reject, a schema that
   * is not an object schema or does not compile, and `duplicate_tool` for a name already taken
   * (use {@link ToolRegistry.replace} to swap an implementation on purpose).
   */
  register(tool: Tool): this {
    if (this.#entries.has(tool.name)) {
      throw new UserError('duplicate_tool', `A tool named \`${tool.name}\` is already registered`, {
        tool: tool.name,
      });
    }
    this.#entries.set(tool.name, prepare(tool));
    return this;
  }

  /** Registers `tool`, replacing any tool of the same name (e.g. binding `complete_task`). */
  replace(tool: Tool): this {
    this.#entries.set(tool.name, prepare(tool));
    return this;
  }

  /** The tool with this canonical name, if registered. */
  get(name: string): Tool | undefined {
    return this.#entries.get(name)?.tool;
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** Every tool, in registration order. */
  list(): Tool[] {
    return [...this.#entries.values()].map((entry) => entry.tool);
  }

  /** Canonical names, in registration order. */
  names(): string[] {
    return [...this.#entries.keys()];
  }

  /** The compiled argument validator of a registered tool. */
  validator(name: string): SchemaValidator | undefined {
    const entry = this.#entries.get(name);
    if (entry === undefined) return undefined;
    entry.validate ??= compileOwnSchema(entry.tool.parameters, `tool \`${entry.tool.name}\``);
    return entry.validate;
  }
}

function prepare(tool: Tool): Entry {
  if (!TOOL_NAME_PATTERN.test(tool.name)) {
    throw new UserError(
      'invalid_tool',
      `Expected a tool name of 1-64 letters, digits, \`_\` or \`-\`, got ${JSON.stringify(tool.name)}`,
      { tool: tool.name },
    );
  }
  if (tool.parameters.type !== 'object') {
    throw new UserError(
      'invalid_tool',
      `Expected the parameters of tool \`${tool.name}\` to be an object schema (\`type: object\`)`,
      { tool: tool.name },
    );
  }
  if (BUILTIN_SCHEMAS.has(tool.parameters)) return { tool, validate: undefined };
  try {
    return { tool, validate: compileSchema(tool.parameters, `tool \`${tool.name}\``) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UserError('invalid_tool', message, { tool: tool.name }, { cause: error });
  }
}
