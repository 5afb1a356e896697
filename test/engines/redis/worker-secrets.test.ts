/**
 * A credential registered on a redis worker (a module provider's own key) is known to the
 * supervisor by the time the agent's result arrives, as one registered in an actor host's thread
 * is, so what the program writes of that result (results.jsonl, the CLI's summary) masks it; and
 * it never reaches Redis in clear on its way (it is sealed for the supervisor's key).
 */
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SEALED_SECRETS_CHARS } from '../../../src/engines/redis/constants.ts';
import { SecretKeyPair, sealSecrets } from '../../../src/engines/redis/secret-box.ts';
import { redactText, redactValue } from '../../../src/journal/redact.ts';
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
const TENANT_KEYED = path.join(repoRoot, 'test/fixtures/scaleout/tenant-keyed-provider.ts');
const PLAIN = path.join(repoRoot, 'test/fixtures/scaleout/plain-provider.ts');
/** tenant-keyed-provider.ts's key, copied (see KEY). */
const TENANT_KEY = 'Hq5vN8xW2cJ7pL3tR9mB';
/** The fixture's key, copied: importing the fixture here would register it in this process. */
const KEY = 'Rw7xQ2mV9bL4nT8kZ3pD';

/** The signal streams of the supervisors of `queueName`. */
async function signalStreams(redis: Redis, queueName: string): Promise<string[]> {
  return redis.keys(`troupe:${queueName}:supervisor:*:signals`);
}

/** How many `secrets` signals the stream `key` holds. */
async function secretSignals(redis: Redis, key: string): Promise<number> {
  const entries = await redis.xrange(key, '-', '+');
  return entries
    .flatMap(([, fields]) => JSON.parse(fields[1] ?? '[]') as { type: string }[])
    .filter((signal) => signal.type === 'secrets').length;
}

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

describe(`credentials registered on a redis worker shared by supervisors${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let workers: TestWorker[] = [];
  const queueName = uniqueName('tenants');

  beforeAll(async () => {
    server = await TestRedis.start();
    workers = [await startWorker(server.url, ['--queue', queueName])];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await server?.destroy();
  });

  /**
   * Runs one agent of a supervisor with `module` as its provider: its result, how many `secrets`
   * signals its stream got (read before it closes, which deletes the stream) and what they hold.
   */
  async function runTenant(
    redis: Redis,
    module: string,
  ): Promise<{ result: unknown; secrets: number; sent: string }> {
    const before = new Set(await signalStreams(redis, queueName));
    const supervisor = new Supervisor({
      backend: 'redis',
      redisUrl: server.url,
      queueName,
      cwd: tempDir('troupe-redis-tenants-'),
      providers: { tenant: { kind: 'module', module } },
    });
    try {
      const outcome = await supervisor.spawn('worker', { task: 'Say the key.' }).result;
      expect(outcome.status).toBe('completed');
      const streams = (await signalStreams(redis, queueName)).filter((key) => !before.has(key));
      expect(streams).toHaveLength(1);
      const stream = streams[0] ?? '';
      return {
        result: outcome.status === 'completed' ? outcome.result : undefined,
        secrets: await secretSignals(redis, stream),
        sent: JSON.stringify(await redis.xrange(stream, '-', '+')),
      };
    } finally {
      await supervisor.close();
    }
  }

  it('go only to the supervisor whose run registered them, and to each that registers them too', async () => {
    const redis = new Redis(server.url);
    try {
      // Tenant A's provider registers its key on the worker: A masks it, as before.
      const a = await runTenant(redis, TENANT_KEYED);
      expect(a.result).toEqual({ summary: `The key is ${TENANT_KEY}.` });
      expect(redactValue(a.result)).toEqual({ summary: 'The key is [REDACTED].' });
      expect(a.secrets).toBeGreaterThan(0);
      // Tenant B, on the same worker, registers nothing: it is sent nothing, not even sealed.
      const b = await runTenant(redis, PLAIN);
      expect(b.secrets).toBe(0);
      // Tenant C registers the same key (the worker already holds it): it is sent it too.
      const c = await runTenant(redis, TENANT_KEYED);
      expect(c.secrets).toBeGreaterThan(0);
      expect(c.sent).not.toContain(TENANT_KEY);
    } finally {
      redis.disconnect();
    }
  }, 90_000);

  it('refused when forged, replayed or too big, each said once, and the supervisor runs on', async () => {
    const redis = new Redis(server.url);
    const refusals = new Set<string>();
    let warnings = 0;
    let allRefused: () => void = () => {};
    const refused = new Promise<void>((resolve) => {
      allRefused = resolve;
    });
    const onWarning = (warning: Error & { code?: string; detail?: string }): void => {
      if (warning.code !== 'TROUPE_SECRETS_REFUSED' || warning.detail === undefined) return;
      refusals.add(warning.detail);
      warnings += 1;
      if (refusals.size === 4) allRefused();
    };
    process.on('warning', onWarning);
    const before = new Set(await signalStreams(redis, queueName));
    const supervisor = new Supervisor({
      backend: 'redis',
      redisUrl: server.url,
      queueName,
      cwd: tempDir('troupe-redis-forged-'),
      providers: { tenant: { kind: 'module', module: TENANT_KEYED } },
    });
    try {
      expect((await supervisor.spawn('worker', { task: 'Say the key.' }).result).status).toBe('completed');
      const stream = (await signalStreams(redis, queueName)).find((key) => !before.has(key)) ?? '';
      const entries = await redis.xrange(stream, '-', '+');
      const genuine = entries
        .map(([, fields]) => fields[1] ?? '')
        .find((text) => text.includes('"type":"secrets"'));
      expect(genuine).toBeDefined();
      const signal = (sealed: unknown): string =>
        JSON.stringify([{ type: 'secrets', agentId: 'forged\nline', sealed }]);
      const real = (JSON.parse(genuine ?? '[]') as { type: string; sealed: Record<string, string> }[]).find(
        (item) => item.type === 'secrets',
      );
      const forgedValue = 'forged-value-0123';
      for (const text of [
        signal('not sealed'),
        signal({ key: 1 }),
        signal(sealSecrets(new SecretKeyPair().publicKey, [forgedValue])),
        signal({ ...real?.sealed, data: 'A'.repeat(MAX_SEALED_SECRETS_CHARS + 4) }),
        // Replayed as it was: the supervisor opened this one already.
        genuine ?? '',
      ]) {
        await redis.xadd(stream, '*', 'm', text);
      }
      await refused;
      expect([...refusals].sort()).toEqual(['malformed', 'not_for_this_key', 'oversize', 'replayed']);
      expect(warnings).toBe(4);
      expect(redactText(forgedValue)).toBe(forgedValue);
      // The supervisor reads on and runs agents as before.
      expect((await supervisor.spawn('worker', { task: 'Again.' }).result).status).toBe('completed');
    } finally {
      process.off('warning', onWarning);
      await supervisor.close();
      redis.disconnect();
    }
  }, 90_000);
});
