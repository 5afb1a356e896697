/** troupe's built-in tools. */
import { ToolRegistry } from '../registry.ts';
import type { Tool } from '../types.ts';
import { grepTool } from './grep.ts';
import { listDirTool } from './list-dir.ts';
import { readFileTool } from './read-file.ts';
import { runTerminalCmdTool } from './run-terminal-cmd.ts';
import { searchReplaceTool } from './search-replace.ts';
import { todoWriteTool } from './todo-write.ts';

/** The file, shell and todo tools, in the order they are offered to the model. */
export function builtinTools(): Tool[] {
  return [readFileTool, listDirTool, grepTool, searchReplaceTool, runTerminalCmdTool, todoWriteTool];
}

/**
 * A registry of the built-in tools plus `extra` (e.g. the bound `complete_task` and
 * `wait_for_instruction` declarations, host tools, user tools).
 */
export function createToolRegistry(extra: Iterable<Tool> = []): ToolRegistry {
  return new ToolRegistry([...builtinTools(), ...extra]);
}
