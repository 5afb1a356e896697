/** troupe's built-in tools. */
import { markBuiltinTools, ToolRegistry } from '../registry.ts';
import type { Tool } from '../types.ts';
import { globTool } from './glob.ts';
import { grepTool } from './grep.ts';
import { listDirTool } from './list-dir.ts';
import { readFileTool } from './read-file.ts';
import { runTerminalCmdTool } from './run-terminal-cmd.ts';
import { searchReplaceTool } from './search-replace.ts';
import { todoWriteTool } from './todo-write.ts';
import { webFetchTool } from './web-fetch.ts';
import { webSearchTool } from './web-search.ts';
import { writeFileTool } from './write-file.ts';

const BUILTIN_TOOLS: readonly Tool[] = [
  readFileTool,
  listDirTool,
  globTool,
  grepTool,
  searchReplaceTool,
  writeFileTool,
  runTerminalCmdTool,
  todoWriteTool,
  webFetchTool,
  webSearchTool,
];
markBuiltinTools(BUILTIN_TOOLS);

/** The file, shell, todo and web tools, in the order they are offered to the model. */
export function builtinTools(): Tool[] {
  return [...BUILTIN_TOOLS];
}

/** Canonical names of the built-in tools. */
export const BUILTIN_TOOL_NAMES: readonly string[] = builtinTools().map((tool) => tool.name);

/**
 * A registry of the built-in tools plus `extra` (e.g. the bound `complete_task` and
 * `wait_for_instruction` declarations, host tools, user tools). An extra tool with a built-in's
 * name replaces the built-in (a `web_search` with a backend, a `web_fetch` with other host lists);
 * two extra tools with one name are a `duplicate_tool` error.
 */
export function createToolRegistry(extra: Iterable<Tool> = []): ToolRegistry {
  const registry = new ToolRegistry(builtinTools());
  const added = new Set<string>();
  for (const tool of extra) {
    if (added.has(tool.name) || !BUILTIN_TOOL_NAMES.includes(tool.name)) registry.register(tool);
    else registry.replace(tool);
    added.add(tool.name);
  }
  return registry;
}
