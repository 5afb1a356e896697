import type { AgentDefinition } from '../../src/definition/types.ts';
import type { AuditEvent } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { type RunAgentOptions, runAgent } from '../../src/loop/run-agent.ts';
import type { AgentOutcome } from '../../src/loop/types.ts';
import {
  ScriptedProvider,
  type ScriptedProviderOptions,
  type ScriptedStep,
} from '../../src/providers/scripted.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import type { Tool } from '../../src/tools/types.ts';
import { tempDir as makeTempDir } from '../fixtures/temp-dirs.ts';
import { makeDefinition } from '../prompt/make-definition.ts';

/** A new temp folder, removed after the test file (test/fixtures/temp-dirs.ts). */
export function tempDir(prefix = 'troupe-loop-'): string {
  return makeTempDir(prefix);
}

export interface Harness {
  readonly outcome: AgentOutcome;
  readonly events: readonly AuditEvent[];
  readonly provider: ScriptedProvider;
}

/** Runs an agent against scripted steps with an in-memory journal; asserts every step was used. */
export async function runScripted(
  steps: readonly ScriptedStep[],
  options: {
    definition?: Partial<AgentDefinition>;
    tools?: Tool[];
    run?: Partial<RunAgentOptions>;
    allowUnused?: boolean;
    provider?: ScriptedProviderOptions;
  } = {},
): Promise<Harness> {
  const provider = new ScriptedProvider(steps, options.provider);
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'agent-1',
    definition: makeDefinition(options.definition),
    task: 'Do the task.',
    provider,
    model: 'test-model',
    registry: createToolRegistry(options.tools ?? []),
    cwd: options.run?.cwd ?? tempDir(),
    journal,
    systemPrompt: 'SYSTEM',
    sleep: async () => {},
    ...options.run,
  });
  if (!options.allowUnused) provider.assertAllUsed();
  return { outcome, events: journal.events, provider };
}

/** A tool that records its calls. */
export function recordingTool(
  name: string,
  result: (args: Record<string, unknown>) => ReturnType<Tool['execute']>,
  readOnly = true,
) {
  const calls: Record<string, unknown>[] = [];
  const tool: Tool = {
    name,
    description: `The ${name} tool.`,
    parameters: { type: 'object', properties: { value: { type: 'string' } }, additionalProperties: true },
    readOnly,
    execute: (args) => {
      calls.push(args);
      return result(args);
    },
  };
  return { tool, calls };
}

export function eventsOf<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T) {
  return events.filter((e): e is Extract<AuditEvent, { type: T }> => e.type === type);
}
