import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { MAX_IGNORED_TURN_EVENTS } from '../../src/loop/round.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import type { Provider, Turn, TurnEvent } from '../../src/providers/types.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

/**
 * A provider module gone wrong in another way: its turn never ends, it sends events as fast as
 * microtasks run. Each would hold the agent's thread (heartbeats included) until the supervisor
 * terminated it; the loop bounds what it takes from a turn as the built-in providers do.
 */
function flooding(event: () => TurnEvent): Provider {
  let sent = 0;
  return {
    name: 'flooding',
    turn(): Turn {
      return {
        [Symbol.asyncIterator]: () => ({
          next: () => {
            sent += 1;
            return Promise.resolve({ done: false, value: event() });
          },
        }),
        respond() {},
        stop() {},
      };
    },
    get sent() {
      return sent;
    },
  } as Provider & { readonly sent: number };
}

function run(provider: Provider) {
  return runAgent({
    agentId: 'agent-1',
    definition: makeDefinition(),
    task: 'Do the task.',
    provider,
    model: 'test-model',
    registry: createToolRegistry([]),
    cwd: tempDir(),
    journal: new MemoryJournal(),
    systemPrompt: 'SYSTEM',
  });
}

describe('a provider that floods its turn', () => {
  it('with events of unknown types: Failed(provider_error), bad_response, after the bound', async () => {
    const provider = flooding(() => ({ type: 'keepalive' }) as unknown as TurnEvent);
    const outcome = await run(provider);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      error: { code: 'bad_response' },
    });
    expect((provider as Provider & { sent: number }).sent).toBe(MAX_IGNORED_TURN_EVENTS + 1);
  });

  it('with text without end: Failed(provider_error), response_too_large', async () => {
    const outcome = await run(flooding(() => ({ type: 'text_delta', text: 'x'.repeat(10_000) })));
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
      error: { code: 'response_too_large', fields: { maxOutputChars: 2_000_000 } },
    });
  });
});
