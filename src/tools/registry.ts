/** The tool registry: every tool an agent could be given, by canonical name. */
import { MAX_TIMER_MS } from '../constants.ts';
import { describeValue, UserError } from '../errors.ts';
import { compileOwnSchema, compileSchema, type SchemaValidator } from './schema.ts';
import type { JsonSchema, Tool } from './types.ts';

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
 * Entries by tool object, and validators by parameter schema object: a tool registered in many
 * registries (each agent of an actor host builds one over the host's) is checked and compiled
 * once, and its entry is shared. Tools and their schemas are not to be changed once registered.
 */
const entries = new WeakMap<Tool, Entry>();
const validators = new WeakMap<JsonSchema, SchemaValidator>();
const NONE_HIDDEN: ReadonlySet<string> = new Set();

/**
 * Tools by canonical name. Each tool's parameter schema is compiled once, when it is first
 * registered, so a broken schema fails there rather than at the model's first call (built-in
 * tools: on first use, see {@link markBuiltinTools}).
 */
export class ToolRegistry {
  readonly #entries = new Map<string, Entry>();
  /** The registry this one extends, and the names of it this one hides (see {@link extend}). */
  #base: ToolRegistry | undefined;
  #hidden: ReadonlySet<string> | undefined;

  /** Creates a registry holding `tools` (see {@link ToolRegistry.register}). */
  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  /**
   * A registry with this one's tools, less those named in `hidden`, followed by `tools`. This
   * registry's entries are read through, not copied: the agents of an actor host each extend the
   * host's registry, so a parked agent keeps only its own few entries. Throws like
   * {@link ToolRegistry.register} when `tools` take a name that is still visible.
   */
  extend(tools: Iterable<Tool>, hidden: ReadonlySet<string> = NONE_HIDDEN): ToolRegistry {
    const layer = new ToolRegistry();
    layer.#base = this;
    layer.#hidden = hidden;
    for (const tool of tools) layer.register(tool);
    return layer;
  }

  #inBase(name: string): Entry | undefined {
    if (this.#base === undefined || this.#hidden?.has(name) === true) return undefined;
    return this.#base.#entry(name);
  }

  #entry(name: string): Entry | undefined {
    return this.#entries.get(name) ?? this.#inBase(name);
  }

  /**
   * Adds a tool. Throws UserError `invalid_tool` for a name providers would reject, a schema that
   * is not an object schema or does not compile, and `duplicate_tool` for a name already taken
   * (use {@link ToolRegistry.replace} to swap an implementation on purpose).
   */
  register(tool: Tool): this {
    if (this.has(tool.name)) {
      throw new UserError('duplicate_tool', `A tool named \`${tool.name}\` is already registered`, {
        tool: tool.name,
      });
    }
    this.#entries.set(tool.name, prepare(tool));
    return this;
  }

  /**
   * Registers `tool`, replacing any tool of the same name (e.g. binding `complete_task`). In a
   * registry made by {@link extend}, a tool replacing one of the base's moves to the end.
   */
  replace(tool: Tool): this {
    if (this.#base !== undefined && !this.#entries.has(tool.name)) {
      this.#hidden = new Set([...(this.#hidden ?? []), tool.name]);
    }
    this.#entries.set(tool.name, prepare(tool));
    return this;
  }

  /** The tool with this canonical name, if registered. */
  get(name: string): Tool | undefined {
    return this.#entry(name)?.tool;
  }

  has(name: string): boolean {
    return this.#entry(name) !== undefined;
  }

  /** Every tool, in registration order (a base's tools first, see {@link extend}). */
  list(): Tool[] {
    // Pushed, not map()ped: map() builds a holey array once its caller is optimized and a packed
    // one before, so code optimized on the earlier arrays (AgentToolbox) deopted and recompiled.
    const tools: Tool[] = [];
    for (const entry of this.#list()) tools.push(entry.tool);
    return tools;
  }

  /** Canonical names, in registration order. */
  names(): string[] {
    const names: string[] = [];
    for (const entry of this.#list()) names.push(entry.tool.name);
    return names;
  }

  /** The compiled argument validator of a registered tool. */
  validator(name: string): SchemaValidator | undefined {
    const entry = this.#entry(name);
    if (entry === undefined) return undefined;
    if (entry.validate === undefined) {
      const { parameters } = entry.tool;
      let validate = validators.get(parameters);
      if (validate === undefined) {
        validate = compileOwnSchema(parameters, `tool \`${entry.tool.name}\``);
        validators.set(parameters, validate);
      }
      entry.validate = validate;
    }
    return entry.validate;
  }

  #list(): Entry[] {
    const own = [...this.#entries.values()];
    if (this.#base === undefined) return own;
    const hidden = this.#hidden;
    const base = this.#base.#list().filter((entry) => hidden?.has(entry.tool.name) !== true);
    return [...base, ...own];
  }
}

function prepare(tool: Tool): Entry {
  let entry = entries.get(tool);
  if (entry === undefined) {
    entry = check(tool);
    entries.set(tool, entry);
  }
  return entry;
}

function check(tool: Tool): Entry {
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
  const { timeoutMs } = tool;
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs < 0 ||
      timeoutMs > MAX_TIMER_MS)
  ) {
    throw new UserError(
      'invalid_tool',
      `Expected \`timeoutMs\` of tool \`${tool.name}\` to be an integer from 0 (no limit) to ${MAX_TIMER_MS}, got ${describeValue(timeoutMs)}`,
      { tool: tool.name },
    );
  }
  if (BUILTIN_SCHEMAS.has(tool.parameters)) return { tool, validate: validators.get(tool.parameters) };
  try {
    let validate = validators.get(tool.parameters);
    if (validate === undefined) {
      validate = compileSchema(tool.parameters, `tool \`${tool.name}\``);
      validators.set(tool.parameters, validate);
    }
    return { tool, validate };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UserError('invalid_tool', message, { tool: tool.name }, { cause: error });
  }
}
