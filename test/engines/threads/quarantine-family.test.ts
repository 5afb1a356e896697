import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { makeDefinition } from '../../prompt/make-definition.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

/** The outcome, or 'unsettled' after a hang guard (generous: a loaded machine starts threads slowly). */
function settled<T>(promise: Promise<T>): Promise<T | 'unsettled'> {
  return Promise.race([
    promise,
    new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 45_000).unref()),
  ]);
}

describe('a quarantined parent awaiting a child that is quarantined in turn', () => {
  it('does not hold the only quarantine thread against its child: both complete', async () => {
    supervisor = policySupervisor({
      cwd: tempDir(),
      threads: 1,
      quarantineThreads: 1,
      providers: { family: { kind: 'module', module: path.join(fixtures, 'family-provider.ts') } },
      defaultProvider: 'family',
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 10 },
    });
    const definition = makeDefinition({
      name: 'delegator',
      path: '/family/delegator.md',
      agentsMd: false,
      tools: ['crash_exit', 'spawn_agent', 'await_agents', 'complete_task'],
    });
    const parent = supervisor.spawn(definition, { task: 'Kill your thread, then delegate.' });
    // Without the fix the child waited for the quarantine thread its parent held while the parent
    // waited for the child: neither ever ended.
    expect(await settled(parent.result)).toMatchObject({ status: 'completed', result: { parent: 'done' } });
  });
});
