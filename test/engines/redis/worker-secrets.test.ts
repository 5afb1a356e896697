/**
 * A credential registered on a redis worker (a module provider's own key) is known to the
 * supervisor by the time the agent's result arrives, as one registered in an actor host's thread
 * is, so what the program writes of that result (results.jsonl, the CLI's summary) masks it; and
 * it never reaches Redis in clear on its way (it is sealed for the supervisor's key).
 */
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactValue } from '../../../src/journal/redact.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { tempDir } from '../../fixtures/temp-dirs.ts';
import {
  killWorkers,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const KEYED = path.join(repoRoot, 'test/fixtures/scaleout/keyed-provider.ts');
/** The fixture's key, copied: importing the fixture here would register it in this process. */
const KEY = 'Rw7xQ2mV9bL4nT8kZ3pD';

/** What workers sent the supervisors of `queueName` on their signal streams, as text. */
async function signalsOf(redis: Redis, queueName: string): Promise<string> {
  const streams = await redis.keys(`troupe:${queueName}:supervisor:*:signals`);
  const entries = await Promise.all(streams.map((key) => redis.xrange(key, '-', '+')));
  return JSON.stringify(entries);
}

describe(`credentials registered on a redis worker${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let workers: TestWorker[] = [];
  const queueName = uniqueName('secrets');

  beforeAll(async () => {
    server = await TestRedis.start();
    workers = [await startWorker(server.url, ['--queue', queueName])];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await server?.destroy();
  });

  it('are masked by the supervisor by the time the result arrives, and cross Redis sealed', async () => {
    const supervisor = new Supervisor({
      backend: 'redis',
      redisUrl: server.url,
      queueName,
      cwd: tempDir('troupe-redis-secrets-'),
      providers: { keyed: { kind: 'module', module: KEYED } },
    });
    try {
      const outcome = await supervisor.spawn('worker', { task: 'Say the key.' }).result;
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      // The deliverable is the model's; what is written of it is masked.
      expect(outcome.result).toEqual({ summary: `The key is ${KEY}.` });
      expect(redactValue(outcome.result)).toEqual({ summary: 'The key is [REDACTED].' });
      // Sent on the signal stream (which Redis persists), sealed: the key is not there in clear.
      const redis = new Redis(server.url);
      try {
        const sent = await signalsOf(redis, queueName);
        expect(sent).toContain('\\"type\\":\\"secrets\\"');
        expect(sent).not.toContain(KEY);
      } finally {
        redis.disconnect();
      }
    } finally {
      await supervisor.close();
    }
  }, 60_000);
});
