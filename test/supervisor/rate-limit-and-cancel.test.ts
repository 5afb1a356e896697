import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PROVIDER_PAUSE_MS } from '../../src/providers/constants.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';
import { completeTaskResponse, startMockServer } from './mock-openai.ts';

let supervisor: Supervisor | undefined;
let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await supervisor?.close();
  await stop?.();
  supervisor = undefined;
  stop = undefined;
});

const RETRY_AFTER_MS = 400;

describe('provider admission across threads', () => {
  it('a 429 with retry-after pauses that key for every agent; other keys go on', async () => {
    let rateLimitedAt = 0;
    const server = await startMockServer({
      '/limited': (_req, res, index) => {
        if (index === 0) {
          rateLimitedAt = Date.now();
          res.writeHead(429, {
            'retry-after-ms': String(RETRY_AFTER_MS),
            'content-type': 'application/json',
          });
          res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
          return;
        }
        completeTaskResponse(res, { key: 'limited' });
      },
      '/other': (_req, res) => completeTaskResponse(res, { key: 'other' }),
    });
    stop = server.close;
    const options = (prefix: string) => ({
      baseURL: server.url(`${prefix}/v1`),
      apiKey: 'test-key',
      maxRetries: 4,
    });
    supervisor = new Supervisor({
      threads: 2,
      cwd: tempDir(),
      providers: {
        limited: { kind: 'openai', options: options('/limited') },
        other: { kind: 'openai', options: options('/other') },
      },
      // One request at a time on the limited key: the 429 is seen before anyone else may start.
      limits: { limited: { concurrency: 1 } },
    });
    const backoffs: number[] = [];
    supervisor.on('provider:backoff', (e) => backoffs.push(e.retryAfterMs));
    const limited = Array.from({ length: 4 }, (_, i) =>
      supervisor?.spawn('worker', { task: `limited ${i}`, provider: 'limited', model: 'gpt-4o-mini' }),
    );
    const other = Array.from({ length: 3 }, (_, i) =>
      supervisor?.spawn('worker', { task: `other ${i}`, provider: 'other', model: 'gpt-4o-mini' }),
    );
    const outcomes = await Promise.all([...limited, ...other].map((h) => h?.result));
    expect(outcomes.map((o) => o?.status)).toEqual(Array(7).fill('completed'));
    expect(backoffs).toEqual([RETRY_AFTER_MS]);
    const deadline = rateLimitedAt + RETRY_AFTER_MS;
    const later = server.requests.filter((r) => r.path === '/limited' && r.at > rateLimitedAt);
    expect(later).toHaveLength(4);
    for (const request of later) expect(request.at).toBeGreaterThanOrEqual(deadline);
    expect(server.requests.filter((r) => r.path === '/other')).toHaveLength(3);
  });
});

describe('cancellation', () => {
  it('cancel() closes the provider connection, settles Failed(cancelled) and leaves no listener', async () => {
    let answered: () => void = () => {};
    const requestSeen = new Promise<void>((resolve) => {
      answered = resolve;
    });
    const server = await startMockServer({
      '/hang': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': keep-alive\n\n');
        answered();
      },
    });
    stop = server.close;
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { hang: { kind: 'openai', options: { baseURL: server.url('/hang/v1'), apiKey: 'k' } } },
    });
    const controller = new AbortController();
    const handle = supervisor.spawn('worker', {
      task: 'never ends',
      model: 'gpt-4o-mini',
      signal: controller.signal,
    });
    await requestSeen;
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    handle.cancel('test cancel');
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    for (let i = 0; i < 200 && server.closed.length === 0; i += 1)
      await new Promise((r) => setTimeout(r, 10));
    expect(server.closed).toEqual(['/hang']);
    // The supervisor listened on the caller's signal while the agent ran, and stopped when it ended.
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

/**
 * A 429 asking for a wait far longer than a minute fails its agent at once (rate_limited), and
 * pauses the key for every other agent: at most MAX_PROVIDER_PAUSE_MS, whatever the server asked.
 * Uncapped, one `Retry-After: 999999` stalled every agent of the key for 11 days.
 */
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
