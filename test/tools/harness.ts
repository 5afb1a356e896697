import type { AgentDefinition } from '../../src/definition/types.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { buildToolbox, type Toolbox, type ToolboxOptions } from '../../src/tools/toolbox.ts';
import type { Tool } from '../../src/tools/types.ts';
import { makeDefinition } from '../prompt/make-definition.ts';

/** A toolbox over the built-in tools (plus `extra`) for a definition with `fields`. */
export function toolboxFor(
  cwd: string,
  fields: Partial<AgentDefinition> = {},
  extra: Tool[] = [],
  options: Partial<ToolboxOptions> = {},
): Toolbox {
  return buildToolbox(makeDefinition(fields), createToolRegistry(extra), {
    cwd,
    agentId: 'agent-1',
    ...options,
  });
}
