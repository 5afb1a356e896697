/**
 * Bounds of a supervisor's signal and request streams: an entry larger than a supervisor reads is
 * refused unread (its agent failed, `signal_too_large`), one read returns a bounded number of
 * bytes, and workers split their signals into entries a supervisor reads.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_SIGNAL_FAILURE_CHARS, MAX_STREAM_ENTRY_BYTES } from '../../../src/engines/redis/constants.ts';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import {
  decodeSignals,
  readSignalFailure,
  signalEntries,
  signalFailure,
} from '../../../src/engines/redis/signals.ts';
import { type RefusedEntry, readSupervisorStreams } from '../../../src/engines/redis/supervisor-streams.ts';
import { SystemError } from '../../../src/errors.ts';
import type { WorkerSignal } from '../../../src/protocol/redis.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import {
  definition,
  redisServerPath,
  skipReason,
  stepperProvider,
  TestRedis,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-bounds';

describe('signal entries a worker writes', () => {
  it('splits signals into entries of at most the bound, and sends an oversize end without its outcome', () => {
    const round = (agentId: string): WorkerSignal => ({
      type: 'round',
      agentId,
      round: 1,
      estimatedTokens: 10,
    });
    const ended = {
      type: 'ended',
      agentId: 'big',
      outcome: { status: 'completed', agentId: 'big', result: 'x'.repeat(500) },
    } as unknown as WorkerSignal;
    const huge = { type: 'instructed', agentId: 'a', text: 'y'.repeat(500) } as WorkerSignal;
    const entries = signalEntries([round('a'), round('b'), ended, huge, round('c')], 150);
    for (const entry of entries) expect(Buffer.byteLength(entry)).toBeLessThanOrEqual(150);
    const signals = entries.flatMap((entry) => decodeSignals(entry));
    expect(signals.map((signal) => [signal.type, signal.agentId])).toEqual([
      ['round', 'a'],
      ['round', 'b'],
      ['ended', 'big'],
      ['round', 'c'],
    ]);
    expect(signals[2]).toEqual({ type: 'ended', agentId: 'big' });
    expect(entries.length).toBeGreaterThan(1);
  });

  it('sends an oversize end with its failure, and a failure bounded whatever the error said', () => {
    const failure = signalFailure(
      new SystemError('journal_write_failed', 'm'.repeat(MAX_SIGNAL_FAILURE_CHARS + 10), {
        agentId: 'big',
        stack: 's'.repeat(MAX_SIGNAL_FAILURE_CHARS + 10),
      }),
    );
    expect(failure.code).toBe('journal_write_failed');
    expect(failure.message).toHaveLength(MAX_SIGNAL_FAILURE_CHARS + 3);
    expect(failure.fields).toEqual({});
    const ended = {
      type: 'ended',
      agentId: 'big',
      outcome: { status: 'completed', agentId: 'big', result: 'x'.repeat(20_000) },
      failure,
    } as unknown as WorkerSignal;
    const [entry] = signalEntries([ended], 10_000);
    expect(decodeSignals(entry)).toEqual([{ type: 'ended', agentId: 'big', failure }]);
    // What a supervisor takes from a signal: a failure of the right shape only, bounded the same.
    expect(readSignalFailure(failure)).toEqual(failure);
    expect(readSignalFailure({ code: 'x', message: 'y', fields: { a: 1 } })).toEqual({
      code: 'x',
      message: 'y',
      fields: { a: 1 },
    });
    for (const bad of [
      undefined,
      'job_failed',
      { code: 1, message: 'y', fields: {} },
      { code: 'x', message: 'y' },
    ])
      expect(readSignalFailure(bad)).toBeUndefined();
    expect(readSignalFailure({ code: 'x', message: 'y'.repeat(100_000), fields: {} })?.message).toHaveLength(
      MAX_SIGNAL_FAILURE_CHARS + 3,
    );
  });
});

describe(`a supervisor's stream bounds${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let redis: Redis;
  const supervisors: RedisSupervisor[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.close()));
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
  });

  it('refuses an entry over the bound without receiving it, and reads the rest in bounded reads', async () => {
    const signals = uniqueName('signals');
    const requests = uniqueName('requests');
    const batch = (agentId: string): string =>
      JSON.stringify([{ type: 'round', agentId, round: 1, estimatedTokens: 1 }]);
    await redis.xadd(signals, '*', 'm', batch('before'));
    // 4 MB naming an agent, and 4 MB naming none.
    const padding = 'z'.repeat(4_000_000);
    await redis.xadd(signals, '*', 'm', `[{"type":"text","agentId":"loud","text":"${padding}"}]`);
    await redis.xadd(signals, '*', 'm', `[{"type":"text","text":"${padding}"}]`);
    for (let index = 0; index < 40; index += 1) await redis.xadd(signals, '*', 'm', batch(`after-${index}`));
    await redis.xadd(
      requests,
      '*',
      'm',
      `{"requestId":"r","agentId":"loud","name":"t","args":{"a":"${padding}"}}`,
    );

    const reader = redis.duplicate({ enableAutoPipelining: false });
    await reader.ping();
    let received = 0;
    reader.stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    const seen: string[] = [];
    const refused: RefusedEntry[] = [];
    let stopped = false;
    const reading = readSupervisorStreams({
      reader,
      signals,
      requests,
      stopped: () => stopped,
      onSignal: (signal) => seen.push(signal.agentId),
      onCall: () => seen.push('call'),
      onRefused: (entry) => refused.push(entry),
      maxEntryBytes: 1_000,
      maxReadBytes: 500,
    });
    await vi.waitFor(() => expect(seen).toHaveLength(41), { interval: 20 });
    stopped = true;
    reader.disconnect();
    await reading;
    expect(seen).toEqual(['before', ...Array.from({ length: 40 }, (_, index) => `after-${index}`)]);
    expect(refused.map(({ stream, agentId }) => [stream, agentId])).toEqual([
      ['signals', 'loud'],
      ['signals', undefined],
      ['requests', 'loud'],
    ]);
    expect(refused[0]?.size).toBeGreaterThan(4_000_000);
    // None of the three 4 MB entries came over the connection.
    expect(received).toBeLessThan(1_000_000);
  });

  it('fails the agent an oversize entry names with signal_too_large, and goes on reading', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const queueName = uniqueName('oversize');
    const supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      providers: { stepper: stepperProvider(1) },
      definitions: [definition('stepper', { tools: ['complete_task'] })],
      compat: false,
      maxBatchSize: 1,
    });
    supervisors.push(supervisor);
    // No worker: the jobs wait, and the agents run until something ends them.
    const loud = supervisor.spawn('stepper', { task: 'Step.' });
    const quiet = supervisor.spawn('stepper', { task: 'Step.' });
    const keys = new ScaleoutKeys(PREFIX, queueName);
    let supervisorId: string | undefined;
    await vi.waitFor(
      async () => {
        const data = await redis.hget(keys.job(loud.id), 'data');
        supervisorId = (JSON.parse(data ?? '{}') as { supervisorId?: string }).supervisorId;
        expect(supervisorId).toBeDefined();
      },
      { interval: 20 },
    );
    const stream = keys.signals(supervisorId ?? '');
    const text = 'w'.repeat(MAX_STREAM_ENTRY_BYTES);
    await redis.xadd(stream, '*', 'm', `[{"type":"text","agentId":"${loud.id}","text":"${text}"}]`);
    const outcome = await loud.result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'signal_too_large' },
    });
    expect(outcome.status === 'failed' && outcome.error.fields).toMatchObject({
      agentId: loud.id,
      limit: MAX_STREAM_ENTRY_BYTES,
      stream: 'signals',
    });
    expect(warn.mock.calls.map(([, options]) => (options as { code?: string }).code)).toContain(
      'TROUPE_SIGNAL_TOO_LARGE',
    );
    // Still reading: a later signal about the other agent is handled.
    const started = new Promise((resolve) => supervisor.once('agent:started', resolve));
    await redis.xadd(
      stream,
      '*',
      'm',
      JSON.stringify([{ type: 'started', agentId: quiet.id, workerId: 7, resumed: false, restart: 0 }]),
    );
    expect(await started).toMatchObject({ agentId: quiet.id, hostId: 7 });
    quiet.cancel('done');
  });
});
