/**
 * Tool names as definitions write them. troupe's tools have canonical snake_case names
 * (`read_file`); Claude Code files name its own tools (`Read`, `Bash`, `Task`), often in another
 * case (`read`, `BASH`). This table says which troupe tool each Claude Code name admits, and which
 * Claude Code tools troupe has no counterpart for, so a definition never loses a tool silently.
 */

/** How a rule's parenthesised specifier (`Bash(git diff:*)`) constrains a call of a tool. */
export type SpecifierKind =
  /** A shell command prefix or wildcard pattern, checked against the `command` argument. */
  | 'command'
  /** A gitignore-style path pattern for tools that read files (`path` argument). */
  | 'read-path'
  /** A gitignore-style path pattern for tools that change files (`path` argument). */
  | 'edit-path'
  /** `domain:<host>`, checked against the host of the `url` argument (and every redirect). */
  | 'domain'
  /** A definition name, checked against the `agent` argument of `spawn_agent`. */
  | 'agent';

/** A Claude Code tool and what troupe gives an agent that lists it. */
export type ClaudeCodeTool =
  | {
      readonly name: string;
      /** Canonical troupe tools the name admits in `tools` (and removes in `disallowedTools`). */
      readonly admits: readonly string[];
      /**
       * Tools a `disallowedTools` entry with a specifier applies to: Claude Code applies `Read(...)`
       * deny rules to every tool that reads files, `Edit(...)` ones to every tool that edits.
       * @default admits
       */
      readonly denyScope?: readonly string[];
    }
  | {
      readonly name: string;
      /** Why troupe offers nothing for this name (shown in the `unknown_tool` warning). */
      readonly unsupported: string;
    };

const READERS = ['read_file', 'list_dir', 'grep', 'glob'];
const EDITORS = ['search_replace', 'write_file'];

/** Claude Code tool names, by their usual spelling. Looked up case-insensitively. */
export const CLAUDE_CODE_TOOLS: readonly ClaudeCodeTool[] = [
  { name: 'Read', admits: ['read_file'], denyScope: READERS },
  { name: 'Write', admits: ['write_file'], denyScope: EDITORS },
  { name: 'Edit', admits: ['search_replace'], denyScope: EDITORS },
  { name: 'MultiEdit', admits: ['search_replace'], denyScope: EDITORS },
  { name: 'Glob', admits: ['glob'], denyScope: READERS },
  { name: 'Grep', admits: ['grep'], denyScope: READERS },
  { name: 'LS', admits: ['list_dir'], denyScope: READERS },
  { name: 'Bash', admits: ['run_terminal_cmd'] },
  { name: 'TodoWrite', admits: ['todo_write'] },
  // Claude Code 2 split TodoWrite into task-list tools; troupe's todo list covers all four.
  { name: 'TaskCreate', admits: ['todo_write'] },
  { name: 'TaskUpdate', admits: ['todo_write'] },
  { name: 'TaskList', admits: ['todo_write'] },
  { name: 'TaskGet', admits: ['todo_write'] },
  { name: 'WebFetch', admits: ['web_fetch'] },
  { name: 'WebSearch', admits: ['web_search'] },
  { name: 'Task', admits: ['spawn_agent', 'await_agents'], denyScope: ['spawn_agent'] },
  { name: 'Agent', admits: ['spawn_agent', 'await_agents'], denyScope: ['spawn_agent'] },
  { name: 'SendMessage', admits: ['send_instruction'] },
  { name: 'NotebookRead', admits: ['read_file'], denyScope: READERS },
  {
    name: 'NotebookEdit',
    unsupported: 'troupe has no notebook editor; edit the .ipynb JSON with search_replace or write_file',
  },
  {
    name: 'BashOutput',
    unsupported: 'troupe runs every command to completion; there are no background shells',
  },
  {
    name: 'KillShell',
    unsupported: 'troupe runs every command to completion; there are no background shells',
  },
  {
    name: 'KillBash',
    unsupported: 'troupe runs every command to completion; there are no background shells',
  },
  { name: 'ExitPlanMode', unsupported: 'troupe agents have no interactive plan mode to exit' },
  { name: 'EnterPlanMode', unsupported: 'troupe agents have no interactive plan mode' },
  {
    name: 'AskUserQuestion',
    unsupported: 'troupe agents run without a user to ask; use wait_for_instruction',
  },
  { name: 'SlashCommand', unsupported: 'troupe has no slash commands' },
  { name: 'Skill', unsupported: 'troupe lists skills in the system prompt (see `skills`)' },
  { name: 'TeamCreate', unsupported: 'troupe has no agent teams; use spawn_agent' },
  { name: 'TeamDelete', unsupported: 'troupe has no agent teams' },
  { name: 'LSP', unsupported: 'troupe has no language-server tool' },
  { name: 'ListMcpResourcesTool', unsupported: 'troupe exposes MCP tools, not resources' },
  { name: 'ReadMcpResourceTool', unsupported: 'troupe exposes MCP tools, not resources' },
];

const BY_LOWER_NAME: ReadonlyMap<string, ClaudeCodeTool> = new Map(
  CLAUDE_CODE_TOOLS.map((tool) => [tool.name.toLowerCase(), tool]),
);

/** The Claude Code tool called `name` (any case), if there is one. */
export function claudeCodeTool(name: string): ClaudeCodeTool | undefined {
  return BY_LOWER_NAME.get(name.toLowerCase());
}

/** How the specifier of a rule applies to each canonical tool that takes one. */
export const SPECIFIER_KINDS: Readonly<Record<string, SpecifierKind>> = {
  run_terminal_cmd: 'command',
  read_file: 'read-path',
  list_dir: 'read-path',
  grep: 'read-path',
  glob: 'read-path',
  search_replace: 'edit-path',
  write_file: 'edit-path',
  web_fetch: 'domain',
  spawn_agent: 'agent',
};

/** The specifier kind of a canonical tool, or undefined when its rules cannot take a specifier. */
export function specifierKind(canonical: string): SpecifierKind | undefined {
  return Object.hasOwn(SPECIFIER_KINDS, canonical) ? SPECIFIER_KINDS[canonical] : undefined;
}

/**
 * Tools an agent gets only when its `tools` names them (by any of their names), never through
 * `*` or an omitted list: agents must not fan out by accident.
 */
export const OPT_IN_TOOLS: ReadonlySet<string> = new Set(['spawn_agent', 'send_instruction', 'await_agents']);

/** Prefix of tools contributed by MCP servers: `mcp__<server>__<tool>`, as Claude Code names them. */
export const MCP_PREFIX = 'mcp__';

/** The server part of an MCP tool name or rule (`mcp__github__create_issue` -> `github`). */
export function mcpServerOf(name: string): string | undefined {
  if (!name.toLowerCase().startsWith(MCP_PREFIX)) return undefined;
  const rest = name.slice(MCP_PREFIX.length);
  const end = rest.indexOf('__');
  const server = end === -1 ? rest : rest.slice(0, end);
  return server === '' || server === '*' ? undefined : server;
}
