/**
 * Every option that arms a timer is refused past MAX_TIMER_MS (2^31 - 1 ms): Node fires a longer
 * timer at once, so such a limit would end its wait at once (a thread "failing" to start at
 * once, a quarantined agent failing at once). The options are listed here by hand: a new one
 * belongs in this list, checked with `timeLimit` (src/option-checks.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_TIMER_MS } from '../src/constants.ts';
import { prepareRedisOptions } from '../src/engines/redis/options.ts';
import { prepareWorkerOptions } from '../src/engines/redis/worker.ts';
import { prepareThreadOptions } from '../src/engines/threads/options.ts';
import { Scoring } from '../src/eval/scoring.ts';
import { JournalWriter } from '../src/journal/writer.ts';
import { resolveLimits } from '../src/loop/limits.ts';
import { McpConnection } from '../src/mcp/connection.ts';
import { timeLimit, timerDelay } from '../src/option-checks.ts';
import { AnthropicProvider } from '../src/providers/anthropic.ts';
import { OpenAIProvider } from '../src/providers/openai.ts';
import { ScriptedProvider } from '../src/providers/scripted.ts';
import { SimulatedProvider } from '../src/providers/simulated.ts';
import { prepareSupervisorOptions } from '../src/supervisor/options.ts';
import { createWebFetchTool } from '../src/tools/builtin/web-fetch.ts';

const PAST = MAX_TIMER_MS + 1;
const journals = mkdtempSync(path.join(tmpdir(), 'troupe-option-checks-'));
let journalCount = 0;
afterAll(() => rmSync(journals, { recursive: true, force: true }));

/** Each option at the cap (accepted) and past it (refused), by the call that checks it (maybe async). */
const OPTIONS: readonly (readonly [string, (ms: number) => unknown])[] = [
  ['graceMs', (ms) => prepareSupervisorOptions({ graceMs: ms })],
  ['restart.baseDelayMs', (ms) => prepareSupervisorOptions({ restart: { baseDelayMs: ms } })],
  ['restart.maxDelayMs', (ms) => prepareSupervisorOptions({ restart: { maxDelayMs: ms } })],
  ['approvals.timeoutMs', (ms) => prepareSupervisorOptions({ approvals: { timeoutMs: ms } })],
  [
    'heartbeat.intervalMs',
    (ms) => prepareThreadOptions({ heartbeat: { intervalMs: ms, timeoutMs: ms } }, false),
  ],
  ['heartbeat.timeoutMs', (ms) => prepareThreadOptions({ heartbeat: { timeoutMs: ms } }, false)],
  ['threadStartTimeoutMs', (ms) => prepareThreadOptions({ threadStartTimeoutMs: ms }, false)],
  ['quarantineWaitMs', (ms) => prepareThreadOptions({ quarantineWaitMs: ms }, false)],
  ['parkAfterMs', (ms) => prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:6379', parkAfterMs: ms })],
  [
    'reconcileIntervalMs',
    (ms) => prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:6379', reconcileIntervalMs: ms }),
  ],
  [
    'connectTimeoutMs',
    (ms) => prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:6379', connectTimeoutMs: ms }),
  ],
  [
    'redisDownTimeoutMs',
    (ms) => prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:6379', redisDownTimeoutMs: ms }),
  ],
  [
    'worker lockDurationMs',
    (ms) => prepareWorkerOptions({ redisUrl: 'redis://127.0.0.1:6379', lockDurationMs: ms }),
  ],
  [
    'worker stalledIntervalMs',
    (ms) => prepareWorkerOptions({ redisUrl: 'redis://127.0.0.1:6379', stalledIntervalMs: ms }),
  ],
  [
    'worker connectTimeoutMs',
    (ms) => prepareWorkerOptions({ redisUrl: 'redis://127.0.0.1:6379', connectTimeoutMs: ms }),
  ],
  [
    'unservedAfterMs',
    (ms) => prepareRedisOptions({ redisUrl: 'redis://127.0.0.1:6379', unservedAfterMs: ms }),
  ],
  ['limits.wallClockMs', (ms) => resolveLimits({ wallClockMs: ms }, 32)],
  ['openai timeoutMs', (ms) => new OpenAIProvider({ apiKey: 'k', timeoutMs: ms })],
  ['openai idleTimeoutMs', (ms) => new OpenAIProvider({ apiKey: 'k', idleTimeoutMs: ms })],
  ['anthropic timeoutMs', (ms) => new AnthropicProvider({ apiKey: 'k', timeoutMs: ms })],
  ['anthropic idleTimeoutMs', (ms) => new AnthropicProvider({ apiKey: 'k', idleTimeoutMs: ms })],
  ['openai retryBaseDelayMs', (ms) => new OpenAIProvider({ apiKey: 'k', retryBaseDelayMs: ms })],
  ['openai retryMaxDelayMs', (ms) => new OpenAIProvider({ apiKey: 'k', retryMaxDelayMs: ms })],
  ['scripted timeoutMs', (ms) => new ScriptedProvider([], { timeoutMs: ms })],
  ['simulated timeoutMs', (ms) => new SimulatedProvider({ timeoutMs: ms })],
  [
    'limits.*.requestsPerInterval.intervalMs',
    (ms) =>
      prepareSupervisorOptions({ limits: { p: { requestsPerInterval: { count: 1, intervalMs: ms } } } }),
  ],
  ['web_fetch timeoutMs', (ms) => createWebFetchTool({ timeoutMs: ms })],
  [
    'journal intervalMs',
    (ms) => {
      journalCount += 1;
      const file = path.join(journals, `${journalCount}.jsonl`);
      JournalWriter.open(file, { fsync: 'interval', intervalMs: ms }).close();
    },
  ],
  [
    'mcp connectTimeoutMs',
    (ms) =>
      new McpConnection(
        's',
        { type: 'stdio', command: 'x', args: [], env: {} },
        { cwd: '.', connectTimeoutMs: ms },
      ),
  ],
  [
    'scoring functionTimeoutMs',
    (ms) =>
      Scoring.create({
        scorers: [{ name: 'v', type: 'jsonPath', path: '$.v' }],
        functionTimeoutMs: ms,
      }),
  ],
];

describe('time limits past the longest timer delay', () => {
  it.each(OPTIONS)('%s is refused past MAX_TIMER_MS and taken at it', async (_name, prepare) => {
    await prepare(MAX_TIMER_MS);
    await expect(Promise.resolve().then(() => prepare(PAST))).rejects.toThrow(/2147483647/);
  });

  it('timeLimit checks a limit as nonNegative or positiveInt does, capped; timerDelay caps a delay', () => {
    expect(timeLimit('x', undefined, 5)).toBe(5);
    expect(timeLimit('x', 0, 5)).toBe(0);
    expect(() => timeLimit('x', 0, 5, 'positive integer')).toThrow(
      'Expected `x` to be a positive integer, got `0` (number)',
    );
    expect(() => timeLimit('x', PAST, 5, 'positive integer')).toThrow(
      `Expected \`x\` to be at most ${MAX_TIMER_MS}, got ${PAST}`,
    );
    expect(() => timeLimit('x', PAST, 5)).toThrow(`to be a non-negative number up to ${MAX_TIMER_MS}`);
    expect(timerDelay(PAST * 1000)).toBe(MAX_TIMER_MS);
    expect(timerDelay(12)).toBe(12);
  });
});

/**
 * Retry counts are integers with a cap: `restart.maxRetries: 1.5` and `1e300` were taken as is, and
 * a provider's `maxRetries` and `maxBystanderRestarts` had no upper bound (a loop of instant
 * retries with a base delay of 0).
 */
describe('retry counts', () => {
  const COUNTS: readonly (readonly [string, (count: number) => unknown])[] = [
    ['restart.maxRetries', (count) => prepareSupervisorOptions({ restart: { maxRetries: count } })],
    ['maxBystanderRestarts', (count) => prepareThreadOptions({ maxBystanderRestarts: count }, false)],
    ['maxRetries', (count) => new OpenAIProvider({ apiKey: 'k', maxRetries: count })],
    ['maxRetries', (count) => new AnthropicProvider({ apiKey: 'k', maxRetries: count })],
  ];

  it.each(COUNTS)('%s is an integer from 0 to 1000', (name, prepare) => {
    prepare(0);
    prepare(1000);
    for (const bad of [1.5, 1001, 1e300, -1]) {
      expect(() => prepare(bad), `${name}: ${bad}`).toThrow(
        expect.objectContaining({
          code: 'invalid_option',
          message: expect.stringMatching(new RegExp(`\`${name.replace('.', '\\.')}\`.*1000`)),
          fields: expect.objectContaining({ option: name }),
        }),
      );
    }
  });
});
