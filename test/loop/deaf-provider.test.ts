import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import type { AgentOutcome } from '../../src/loop/types.ts';
import type { Provider, Turn, TurnEvent } from '../../src/providers/types.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

/** A provider module gone wrong: its turn never yields an event and ignores its signal. */
const deaf: Provider = {
  name: 'deaf',
  turn(): Turn {
    return {
      [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<TurnEvent>>(() => {}) }),
      respond() {},
      stop() {},
    };
  },
};

function run(options: { limits?: { wallClockMs: number }; signal?: AbortSignal }) {
  return runAgent({
    agentId: 'agent-1',
    definition: makeDefinition(),
    task: 'Do the task.',
    provider: deaf,
    model: 'test-model',
    registry: createToolRegistry([]),
    cwd: tempDir(),
    journal: new MemoryJournal(),
    systemPrompt: 'SYSTEM',
    ...options,
  });
}

const unsettled = (outcome: Promise<AgentOutcome>) =>
  Promise.race([
    outcome,
    new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 30_000).unref()),
  ]);

describe('a provider that ignores its abort signal', () => {
  it('still ends at the wall-clock limit, Failed(timeout)', async () => {
    // Without the fix the loop waited for the turn's next event for ever: no limit ended it.
    const outcome = await unsettled(run({ limits: { wallClockMs: 100 } }));
    expect(outcome).toMatchObject({ status: 'failed', reason: 'timeout', error: { code: 'wall_clock' } });
  });

  it('still ends when the agent is cancelled, Failed(cancelled)', async () => {
    const controller = new AbortController();
    const outcome = run({ signal: controller.signal });
    setTimeout(() => controller.abort('stop'), 50);
    expect(await unsettled(outcome)).toMatchObject({ status: 'failed', reason: 'cancelled' });
  });
});
