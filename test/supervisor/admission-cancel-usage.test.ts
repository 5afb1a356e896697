/**
 * A request cancelled while it waits for a provider slot never reached the server: it used
 * nothing. It was counted at its estimated input all the same (the agent's usage, the run's total,
 * `troupe fanout`'s budget), like a request cut off in flight, which the server did see.
 */
import { afterEach, describe, expect, it } from 'vitest';
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

describe('a request cancelled at admission', () => {
  it('counts no tokens; the request the server saw and that was cut off still counts its estimate', async () => {
    let seen: () => void = () => {};
    const firstSeen = new Promise<void>((resolve) => {
      seen = resolve;
    });
    const server = await startMockServer({
      '/hang': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': keep-alive\n\n');
        seen();
      },
    });
    stop = server.close;
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { hang: { kind: 'openai', options: { baseURL: server.url('/hang/v1'), apiKey: 'k' } } },
      // One request at a time: the second agent's request waits for the first's slot.
      limits: { hang: { concurrency: 1 } },
    });
    const sup = supervisor;
    const holder = sup.spawn('worker', { task: 'holds the slot', model: 'gpt-4o-mini' });
    await firstSeen;
    const waiter = sup.spawn('worker', { task: 'waits for the slot', model: 'gpt-4o-mini' });
    await new Promise<void>((resolve) => {
      waiter.on('round', () => resolve());
    });
    // Time for its request to reach admission (the test holds either way: a cancel before it is
    // a request never made).
    await new Promise((resolve) => setTimeout(resolve, 300));
    waiter.cancel('the test cancels the waiting agent');
    const waited = await waiter.result;
    expect(waited).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(waited.usage).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    expect(server.requests).toHaveLength(1);

    holder.cancel('the test cancels the agent in flight');
    const held = await holder.result;
    expect(held).toMatchObject({ status: 'failed', reason: 'cancelled', usage: { estimated: true } });
    expect(held.usage.inputTokens).toBeGreaterThan(0);
  });
});
