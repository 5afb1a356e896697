/**
 * One object per distinct definition in a process that runs many agents: the loop's
 * per-definition caches (hash, JSON text, compiled rules) are keyed by object, and every spawn on
 * the redis path parses its own copy out of the job data.
 */
import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../../src/definition/load.ts';
import type { AgentDefinition } from '../../../src/definition/types.ts';
import { SharedDefinitions } from '../../../src/engines/actor/shared-definitions.ts';
import { definitionHashOf } from '../../../src/loop/pinning.ts';

function workerDefinition(): AgentDefinition {
  const text = '---\nname: tester\ndescription: A test agent.\ntools: [complete_task]\n---\nDo the task.\n';
  const { definition } = parseDefinition(text, 'test:tester', { source: 'builtin' });
  if (!definition) throw new Error('the test definition does not load');
  return definition;
}

describe('shared definitions', () => {
  it('maps equal copies to the first object, and different definitions to their own', () => {
    const shared = new SharedDefinitions();
    const definition = workerDefinition();
    const copy = JSON.parse(JSON.stringify(definition)) as typeof definition;
    const kept = shared.of(copy);
    expect(shared.of(JSON.parse(JSON.stringify(definition)))).toBe(kept);
    expect(shared.of(copy)).toBe(kept);
    const other = { ...definition, name: 'other' };
    expect(shared.of(other)).toBe(other);
    expect(shared.of(JSON.parse(JSON.stringify(other)))).toBe(other);
  });

  it('lets a copy parsed from job data hit the caches its first copy filled', () => {
    const shared = new SharedDefinitions();
    const text = JSON.stringify(workerDefinition());
    const first = shared.of(JSON.parse(text));
    const hash = definitionHashOf(first);
    const second = shared.of(JSON.parse(text));
    expect(second).toBe(first);
    expect(definitionHashOf(second)).toBe(hash);
  });
});
