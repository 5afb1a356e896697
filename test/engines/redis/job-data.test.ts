/**
 * Batch job data: each agent's job data comes back out of a batch exactly as a job of its own
 * would carry it, and a worker from before batches (whose parser is `parseJobData`) refuses a
 * batch job saying which version it runs (docs/scaleout.md, "Upgrading").
 */
import { describe, expect, it } from 'vitest';
import type { EngineOptions } from '../../../src/engines/engine.ts';
import {
  batchAgentData,
  batchJobData,
  jobData,
  parseBatchJobData,
  parseJobData,
} from '../../../src/engines/redis/job-data.ts';
import { prepareRedisOptions } from '../../../src/engines/redis/options.ts';
import type { ActorSpec } from '../../../src/protocol/messages.ts';

const options = {
  providers: {
    fast: { kind: 'simulated', options: { rounds: 1 } },
    slow: { kind: 'simulated', options: { rounds: 5 } },
  },
  limits: { slow: { concurrency: 2 } },
  toolModules: [],
  cwd: '/work',
  redis: prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:1', retainSeconds: 60 }),
} as unknown as EngineOptions & { redis: ReturnType<typeof prepareRedisOptions> };

const spec = (agentId: string, provider: string): ActorSpec =>
  ({
    agentId,
    provider,
    task: `Task of ${agentId}.`,
    definition: { name: 'd' },
    resume: false,
  }) as unknown as ActorSpec;

const context = { options, hostTools: [], supervisorId: 'sup-1', wantedSignals: [] };

describe('batch job data', () => {
  const agents = [spec('a1', 'fast'), spec('a2', 'slow'), spec('a3', 'fast')].map((s) => jobData(s, context));
  const batch = batchJobData(agents, { attempts: 4, backoffMs: 1000 });

  it("gives back each agent's job data as a job of its own carries it, the shared fields once", () => {
    const { batch: parsed, agents: parsedAgents } = parseBatchJobData(
      JSON.parse(JSON.stringify(batch)),
      'batch~1',
    );
    expect(parsedAgents).toEqual(agents);
    expect(agents.map((_, index) => batchAgentData(parsed, index))).toEqual(agents);
    expect(Object.keys(parsed.providers)).toEqual(['fast', 'slow']);
    for (const [index, data] of agents.entries()) {
      expect(parseJobData(batchAgentData(parsed, index), data.agent.agentId)).toEqual(data);
      // Its host calls end at once when the supervisor's heartbeat key is gone (host-calls.ts).
      expect(batchAgentData(parsed, index).supervisorBeats).toBe(true);
    }
  });

  it('is refused by the parser of a worker from before batches, which says which version it runs', () => {
    expect(() => parseJobData(JSON.parse(JSON.stringify(batch)), 'batch~1')).toThrow(
      expect.objectContaining({
        code: 'invalid_job',
        message: expect.stringContaining('version 3 (this worker runs version 2)'),
      }),
    );
    expect(() => parseBatchJobData(agents[0], 'a1')).toThrow(
      expect.objectContaining({ code: 'invalid_job' }),
    );
  });
});
