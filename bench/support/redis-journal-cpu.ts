/**
 * The redis journal's own cost, apart from the rest of a worker: `--journals` RedisJournals on one
 * auto-pipelined connection to a local redis-server (AOF on, `appendfsync everysec`), each turn
 * appending a scale-out request's events (ToolResult and InferenceSubmitted, then ProviderReceipt
 * and ToolCall) and committing, all journals at once, as a worker's agents do. Prints, per
 * repetition, this process's CPU µs and redis-server's per commit. `--fake` answers every call at
 * once without Redis: what chaining, hashing and the turn's batching cost without the trip.
 *
 *   node --import tsx bench/support/redis-journal-cpu.ts [--journals 500] [--turns 40] [--reps 8] [--fake]
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RedisJournal } from '../../src/engines/redis/stream-journal.ts';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { TestRedis } from '../../test/fixtures/scaleout/processes.ts';
import { median } from './stats.ts';
import { processCpuMs } from './thread-cpu.ts';

const { values } = parseArgs({
  options: {
    journals: { type: 'string', default: '500' },
    turns: { type: 'string', default: '40' },
    reps: { type: 'string', default: '8' },
    fake: { type: 'boolean', default: false },
  },
});
const journals = Number(values.journals);
const turns = Number(values.turns);
const reps = Number(values.reps);

const server = await TestRedis.start({ appendfsync: 'everysec', autoAofRewrite: false });
const redis = new Redis(server.url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
if (values.fake) {
  // Every journal of the call appended: the stream's length is not known, so 1 (as a first entry).
  Object.assign(redis, {
    evalsha: async (_sha: string, keys: number) => Array.from({ length: keys / 2 }, () => 1),
  });
}

/** redis-server's CPU time so far, in ms (NaN without /proc). */
const serverCpuMs = (): number => processCpuMs(server.pid) ?? Number.NaN;

const tools = Array.from({ length: 16 }, (_, i) => `tool_${i}`);
const resultText = `${'x'.repeat(300)} result of the noop tool, which did nothing at all.`;

/** One model request's events, in the two commits a worker makes for it. */
function requestEvents(agentId: string, round: number): [AuditEventInput[], AuditEventInput[]] {
  const events = [
    [
      {
        type: 'ToolResult',
        agentId,
        round,
        callId: `call_${round}`,
        name: 'noop',
        ok: true,
        text: resultText,
      },
      {
        type: 'InferenceSubmitted',
        agentId,
        round,
        step: round,
        request: 1,
        inputHash: 'a'.repeat(64),
        estimatedTokens: 1234,
        tools,
      },
    ],
    [
      {
        type: 'ProviderReceipt',
        agentId,
        round,
        step: round,
        receipt: { provider: 'simulated', model: 'sim', inputTokens: 1000, outputTokens: 20, costUsd: 0 },
        stopReason: 'tool_use',
      },
      { type: 'ToolCall', agentId, round, callId: `call_${round + 1}`, name: 'noop', arguments: '{}' },
    ],
  ];
  return events as unknown as [AuditEventInput[], AuditEventInput[]];
}

const perCommit: number[] = [];
try {
  for (let rep = 0; rep < reps; rep += 1) {
    const open = Array.from(
      { length: journals },
      (_, i) => new RedisJournal({ redis, key: `bench:${rep}:${i}:journal` }),
    );
    open.forEach((journal, i) => {
      journal.append({ type: 'Started', agentId: `agent-${i}`, task: 'x' } as unknown as AuditEventInput);
    });
    const cpu = process.cpuUsage();
    const server0 = serverCpuMs();
    const start = performance.now();
    for (let round = 1; round <= turns; round += 1) {
      for (const half of [0, 1] as const) {
        open.forEach((journal, i) => {
          for (const event of requestEvents(`agent-${i}`, round)[half]) journal.append(event);
          journal.commit();
        });
        await Promise.all(open.map((journal) => journal.flushed()));
      }
    }
    const used = process.cpuUsage(cpu);
    const commits = journals * turns * 2;
    const clientUs = (used.user + used.system) / commits;
    perCommit.push(clientUs);
    console.log(
      `rep ${rep}: client ${clientUs.toFixed(2)} µs/commit, redis-server ${(((serverCpuMs() - server0) * 1000) / commits).toFixed(2)} µs/commit, wall ${(performance.now() - start).toFixed(0)} ms`,
    );
    if (!values.fake) await redis.flushall();
  }
  console.log(`median client ${median(perCommit).toFixed(2)} µs/commit${values.fake ? ' (fake Redis)' : ''}`);
} finally {
  redis.disconnect();
  await server.destroy();
}
