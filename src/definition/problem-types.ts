/** What can be wrong with a definition or block file, and where: the types every reader shares. */

/**
 * What a definition problem is about (see docs/definitions.md for when each is an error or a
 * warning). `unknown_tool` (a `tools` entry the tool registry does not know) is always a warning.
 */
export type ProblemCode =
  | 'parse_error'
  | 'missing_field'
  | 'invalid_field'
  | 'unknown_tool_override'
  | 'unknown_tool'
  /** A non-empty `tools` list none of whose entries names a tool: the agent runs with no tools. */
  | 'no_tools'
  | 'invalid_tool_rule'
  | 'unknown_mcp_server'
  | 'unknown_key'
  /** `model` is neither an alias, `inherit`, `default` nor shaped like a model id (`fable`, `sonet`). */
  | 'unknown_model'
  | 'lenient_parse'
  | 'name_slugified'
  | 'io_error'
  /** The file is not valid UTF-8: what is not was read as U+FFFD. */
  | 'invalid_utf8'
  | 'shadowed'
  /** A block id that is not lowercase slugs joined by dots (`acme.intake`). */
  | 'invalid_block_id'
  /** A block `version` that is not a semver range. */
  | 'invalid_version_range'
  /** The same block referenced twice. */
  | 'duplicate_block'
  /** A prompt block's `parameters` list names the same parameter twice. */
  | 'duplicate_parameter'
  /** No version of a referenced block satisfies its range, or there is no such block. */
  | 'block_unresolvable'
  /** A block that exists but cannot be read (bad YAML, a bad model setting). */
  | 'invalid_block'
  /** `instructions.parameters` names a parameter the prompt block does not declare. */
  | 'unknown_parameter'
  /** A parameter the prompt block declares without a default is not given. */
  | 'missing_parameter'
  /** (agents validate) The system prompt does not render: a template syntax error or unknown variable. */
  | 'template_error';

/** 1-based position in the original file (columns count UTF-16 code units, as editors such as VS Code do). */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/** One error or warning about a definition file. Lines and columns are 1-based. */
export interface DefinitionProblem {
  readonly severity: 'error' | 'warning';
  readonly code: ProblemCode;
  readonly message: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** JSON pointer into the frontmatter, e.g. `/completionRequirement/tool`; `` for the file. */
  readonly path: string;
}
