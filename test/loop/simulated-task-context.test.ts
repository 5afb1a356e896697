/** What a user reads in the simulated model's answer for an agent given context: its task, named as such. */
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { SimulatedProvider } from '../../src/providers/simulated.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

describe('the simulated model in the loop', () => {
  it("answers with the spawn's task as the task and its context as context", async () => {
    const outcome = await runAgent({
      agentId: 'agent-1',
      definition: makeDefinition({ name: 'grader', agentsMd: false }),
      task: 'Grade the retry policy.',
      context: ['Rubric: states the retry count and the backoff.'],
      provider: new SimulatedProvider(),
      model: 'simulated',
      registry: createToolRegistry([]),
      cwd: tempDir(),
      systemPrompt: 'SYSTEM',
      journal: new MemoryJournal(),
    });
    // Before, the answer read "Task: Rubric: states the retry count and the backoff.".
    expect(outcome).toMatchObject({
      status: 'completed',
      result: {
        summary:
          '[simulated] Task: Grade the retry policy.; context: Rubric: states the retry count and the backoff.; 0 tool result(s) seen.',
      },
    });
  });
});
