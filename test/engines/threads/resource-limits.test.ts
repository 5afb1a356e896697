/**
 * The actor hosts' V8 limits: a larger young generation by default (fewer scavenges per agent),
 * and whatever the user sets about either generation used as given.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ResourceLimits } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_HOST_YOUNG_GENERATION_MB,
  hostResourceLimits,
} from '../../../src/engines/threads/options.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('hostResourceLimits', () => {
  it('adds the default young generation when neither generation is set', () => {
    expect(hostResourceLimits(undefined)).toEqual({ maxYoungGenerationSizeMb: 96 });
    expect(hostResourceLimits({ stackSizeMb: 8 })).toEqual({ stackSizeMb: 8, maxYoungGenerationSizeMb: 96 });
  });

  it("uses the user's limits as given when they set either generation", () => {
    expect(hostResourceLimits({ maxYoungGenerationSizeMb: 8 })).toEqual({ maxYoungGenerationSizeMb: 8 });
    expect(hostResourceLimits({ maxOldGenerationSizeMb: 64 })).toEqual({ maxOldGenerationSizeMb: 64 });
  });
});

describe('the actor hosts are started with these limits', () => {
  const limitsInThread = async (resourceLimits?: ResourceLimits): Promise<ResourceLimits> => {
    const cwd = tempDir();
    supervisor = policySupervisor({
      threads: 1,
      cwd,
      defaultProvider: 'policy',
      toolModules: [{ module: path.join(fixtures, 'limits-tool.ts'), export: 'limitsTools' }],
      ...(resourceLimits ? { resourceLimits } : {}),
    });
    const outcome = await supervisor.spawn('worker', { task: 'Please call thread_limits.' }).result;
    expect(outcome.status).toBe('completed');
    return JSON.parse(readFileSync(path.join(cwd, 'thread-limits.json'), 'utf8')) as ResourceLimits;
  };

  it('by default, with the larger young generation', async () => {
    const limits = await limitsInThread();
    expect(limits.maxYoungGenerationSizeMb).toBe(DEFAULT_HOST_YOUNG_GENERATION_MB);
  });

  it("with the user's young generation when set", async () => {
    const limits = await limitsInThread({ maxYoungGenerationSizeMb: 32 });
    expect(limits.maxYoungGenerationSizeMb).toBe(32);
  });
});
