import {
  DEFAULT_BASH_OUTPUT_BYTE_LIMIT,
  DEFAULT_BASH_TIMEOUT_SECS,
  DEFAULT_MAX_STEPS,
} from '../../src/constants.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';

/** A resolved definition with troupe's defaults, overridden by `fields`. */
export function makeDefinition(fields: Partial<AgentDefinition> = {}): AgentDefinition {
  return {
    name: 'tester',
    description: 'An agent for tests.',
    body: 'You are the test agent.',
    promptMode: 'extend',
    tools: undefined,
    disallowedTools: [],
    permissionMode: 'default',
    permissions: { allow: [], ask: [], deny: [] },
    skills: [],
    agentsMd: true,
    outputFormat: 'default',
    bash: { timeoutSecs: DEFAULT_BASH_TIMEOUT_SECS, outputByteLimit: DEFAULT_BASH_OUTPUT_BYTE_LIMIT },
    toolNameOverrides: {},
    paramNameOverrides: {},
    completionRequirement: undefined,
    toolConfig: {},
    model: 'default',
    maxSteps: DEFAULT_MAX_STEPS,
    enabled: true,
    outputSchema: undefined,
    instructions: undefined,
    settings: [],
    modelSettings: {},
    modelSettingsBlock: undefined,
    source: 'project',
    path: '/project/.troupe/agents/tester.md',
    extra: {},
    mcpServers: [],
    bodyLine: 5,
    ...fields,
  };
}
