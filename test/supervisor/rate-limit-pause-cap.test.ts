/**
 * A 429 asking for a wait far longer than a minute fails its agent at once (rate_limited), and
 * pauses the key for every other agent: at most MAX_PROVIDER_PAUSE_MS, whatever the server asked.
 * Uncapped, one `Retry-After: 999999` stalled every agent of the key for 11 days.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PROVIDER_PAUSE_MS } from '../../src/providers/constants.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';
import { startMockServer } from './mock-openai.ts';

let supervisor: Supervisor | undefined;
let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await supervisor?.close();
  await stop?.();
  supervisor = undefined;
  stop = undefined;
});

describe('a rate-limit pause', () => {
  it('is capped at MAX_PROVIDER_PAUSE_MS when the server asks for days', async () => {
    const server = await startMockServer({
      '/limited': (_req, res) => {
        res.writeHead(429, { 'retry-after': '999999', 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_exceeded' } }));
      },
    });
    stop = server.close;
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: {
        limited: { kind: 'openai', options: { baseURL: server.url('/limited/v1'), apiKey: 'test-key' } },
      },
      limits: { limited: { concurrency: 1 } },
    });
    const backoffs: number[] = [];
    supervisor.on('provider:backoff', (event) => backoffs.push(event.retryAfterMs));
    const handle = supervisor.spawn('worker', { task: 'limited', provider: 'limited', model: 'gpt-4o-mini' });
    const outcome = await handle.result;
    expect(outcome.status === 'failed' && outcome.error.code).toBe('rate_limited');
    expect(outcome.status === 'failed' && outcome.error.fields.retryAfterMs).toBe(999_999_000);
    await expect.poll(() => backoffs.length).toBeGreaterThan(0);
    expect(backoffs).toEqual([MAX_PROVIDER_PAUSE_MS]);
  });
});
