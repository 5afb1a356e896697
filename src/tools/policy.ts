/**
 * Tool policy: which registered tools an agent is admitted to use, derived from its definition.
 * The toolbox applies it when the agent is built and again at every call.
 */
import type { AgentDefinition } from '../definition/types.ts';
import type { Tool } from './types.ts';

/**
 * Claude Code tool names, as compat definitions list them, and the built-in tool each one admits.
 * Entries with argument patterns (`Bash(git diff:*)`) are not mapped: admitting the whole tool would
 * grant more than the definition asked for.
 */
export const CLAUDE_CODE_TOOL_ALIASES: Readonly<Record<string, string>> = {
  Read: 'read_file',
  LS: 'list_dir',
  Glob: 'list_dir',
  Grep: 'grep',
  Edit: 'search_replace',
  MultiEdit: 'search_replace',
  Write: 'search_replace',
  Bash: 'run_terminal_cmd',
  TodoWrite: 'todo_write',
};

/** The part of a definition the policy reads. */
export type PolicyDefinition = Pick<AgentDefinition, 'tools' | 'disallowedTools' | 'permissionMode'>;

/** Admission decisions for one agent. */
export interface ToolPolicy {
  /** Why `tool` is not admitted, or `undefined` when it is. */
  refusal(tool: Tool): string | undefined;
  /** Names in `tools` / `disallowedTools` that match no tool in `known` (for warnings). */
  unmatched(known: ReadonlySet<string>): string[];
}

/**
 * Builds the policy of a definition: `tools` omitted (or containing `*`) admits every tool, `[]`
 * none; `disallowedTools` wins over `tools`; `permissionMode: plan` admits read-only tools only.
 * Names are canonical, or Claude Code aliases ({@link CLAUDE_CODE_TOOL_ALIASES}).
 */
export function buildToolPolicy(def: PolicyDefinition): ToolPolicy {
  const allowAll = def.tools === undefined || def.tools.includes('*');
  const allowed = new Set((def.tools ?? []).map(canonicalToolName));
  const denied = new Set(def.disallowedTools.map(canonicalToolName));
  const plan = def.permissionMode === 'plan';
  return {
    refusal(tool) {
      if (denied.has(tool.name)) return 'it is in disallowedTools';
      if (!allowAll && !allowed.has(tool.name)) return 'it is not in the allowed tools';
      if (plan && !tool.readOnly) return 'permissionMode plan admits read-only tools only';
      return undefined;
    },
    unmatched(known) {
      const named = [...(def.tools ?? []), ...def.disallowedTools];
      return named.filter((name) => name !== '*' && !known.has(canonicalToolName(name)));
    },
  };
}

/** The canonical name for a name written in a definition (maps Claude Code aliases). */
export function canonicalToolName(name: string): string {
  return Object.hasOwn(CLAUDE_CODE_TOOL_ALIASES, name) ? (CLAUDE_CODE_TOOL_ALIASES[name] ?? name) : name;
}
