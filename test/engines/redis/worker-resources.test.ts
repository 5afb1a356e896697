/**
 * A worker builds one tool registry per supervisor (no Redis needed until a host tool is called:
 * the registry is only built here, never called).
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { BlockingPool } from '../../../src/engines/redis/blocking-pool.ts';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { MAX_CACHED_REGISTRIES, WorkerResources } from '../../../src/engines/redis/worker-resources.ts';
import type { AgentJobData } from '../../../src/protocol/redis.ts';

const hostTool = {
  name: 'lookup',
  description: 'Looks something up.',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  readOnly: true,
};

/** The tool fields of a job's data, parsed anew as every job's are. */
const job = (supervisorId: string, tools = [hostTool]): AgentJobData =>
  JSON.parse(JSON.stringify({ supervisorId, toolModules: [], hostTools: tools })) as AgentJobData;

describe('worker resources', () => {
  const resources = new WorkerResources({
    redis: {} as Redis,
    pool: {} as BlockingPool,
    keys: new ScaleoutKeys('test', 'q'),
    barrier: async () => {},
  });

  it("reuses a supervisor's registry for every job of it, and builds another for another supervisor", async () => {
    const first = resources.registry(job('sup-1'));
    expect(resources.registry(job('sup-1'))).toBe(first);
    const other = resources.registry(job('sup-2'));
    expect(other).not.toBe(first);
    expect((await first).get('lookup')).toBeDefined();
  });

  it('keeps at most MAX_CACHED_REGISTRIES registries, dropping the least recently used', () => {
    const own = new WorkerResources({
      redis: {} as Redis,
      pool: {} as BlockingPool,
      keys: new ScaleoutKeys('test', 'q'),
      barrier: async () => {},
    });
    const kept = own.registry(job('kept'));
    const dropped = own.registry(job('dropped'));
    for (let i = 0; i < MAX_CACHED_REGISTRIES - 1; i += 1) {
      own.registry(job(`other-${i}`));
      // Used again all along: never the least recently used one.
      expect(own.registry(job('kept'))).toBe(kept);
    }
    expect(own.registry(job('dropped'))).not.toBe(dropped);
    expect(own.registry(job('kept'))).toBe(kept);
  });

  it('builds another registry for another set of host tools', () => {
    const write = { ...hostTool, name: 'store', readOnly: false };
    expect(resources.registry(job('sup-3', [hostTool, write]))).not.toBe(resources.registry(job('sup-3')));
  });
});
