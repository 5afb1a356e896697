/**
 * Issue 14's done-means for `runAgent`: against a loopback server whose model calls a tool on
 * every request, the agent stops at exactly its limit, counted by the server; usage is what the
 * server reported, or estimated (and marked so) when it reported none; the wall clock aborts the
 * request in flight.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { o200kCounter } from '../../src/projection/token-counter.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { costOf, DEFAULT_PRICES } from '../../src/providers/pricing.ts';
import { ScriptedProvider } from '../../src/providers/scripted.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { startToolLoopServer, type ToolLoopServer } from '../fixtures/loopback/tool-loop-server.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { deferred } from '../providers/helpers.ts';
import { eventsOf, tempDir } from './helpers.ts';

const MODEL = 'gpt-4.1-mini';
let server: ToolLoopServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function runAgainst(
  loop: ToolLoopServer,
  options: { limits: Parameters<typeof runAgent>[0]['limits']; stream?: boolean },
) {
  const cwd = tempDir();
  writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
  const journal = new MemoryJournal();
  const provider = new OpenAIProvider({
    baseURL: loop.baseURL,
    apiKey: 'k',
    maxRetries: 0,
    ...(options.stream === false ? { stream: false } : {}),
  });
  const outcome = await runAgent({
    agentId: 'looper',
    definition: makeDefinition({ maxSteps: 32, tools: ['read_file'] }),
    task: 'Review a.txt',
    provider,
    model: MODEL,
    cwd,
    journal,
    systemPrompt: 'You review files.',
    ...(options.limits ? { limits: options.limits } : {}),
  });
  return { outcome, events: journal.events };
}

/** The one tool the agents here are offered, as the loop serializes it for counting. */
function readFileSpec() {
  const tool = createToolRegistry().get('read_file');
  if (!tool) throw new Error('read_file is built in');
  return { name: tool.name, description: tool.description, parameters: tool.parameters };
}

describe('runAgent against a model that always calls a tool', () => {
  it('stops at exactly maxSteps requests, counted by the server, with the usage it reported', async () => {
    server = await startToolLoopServer();
    const { outcome, events } = await runAgainst(server, { limits: { maxSteps: 3 } });
    expect(server.requests()).toBe(3);
    const usage = { inputTokens: 300, outputTokens: 60, cachedInputTokens: 0, reasoningTokens: 0 };
    expect(outcome).toMatchObject({ status: 'failed', reason: 'step_limit', rounds: 1, steps: 3, usage });
    const price = DEFAULT_PRICES[MODEL];
    if (!price) throw new Error('gpt-4.1-mini has a price');
    expect(outcome.costUsd).toBeCloseTo(costOf(usage, price), 12);
    expect(eventsOf(events, 'ProviderReceipt')).toHaveLength(3);
    expect(eventsOf(events, 'ToolCall')).toHaveLength(3);
    // Every request is journalled with its own input hash, and each one re-derives.
    const hashes = eventsOf(events, 'InferenceSubmitted').map((event) => event.inputHash);
    expect(new Set(hashes).size).toBe(3);
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 3,
    });
  });

  it('stops at the token budget inside the round, before the request that would pass it again', async () => {
    server = await startToolLoopServer();
    // 120 tokens per request: 240 after two requests is under 250, 360 after three is not.
    const { outcome } = await runAgainst(server, { limits: { maxTotalTokens: 250 } });
    expect(server.requests()).toBe(3);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'budget',
      error: { code: 'token_budget' },
      steps: 3,
      usage: { inputTokens: 300, outputTokens: 60 },
    });
    expect(outcome.usage.estimated).toBeUndefined();
  });

  it.each([
    ['streamed', true],
    ['non-streamed', false],
  ])(
    'estimates usage a %s server does not report, marks it, and stops at the token budget',
    async (_name, stream) => {
      server = await startToolLoopServer({ usage: null, stream });
      const { outcome, events } = await runAgainst(server, { limits: { maxTotalTokens: 400 }, stream });
      const receipts = eventsOf(events, 'ProviderReceipt');
      expect(server.requests()).toBe(receipts.length);
      expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'token_budget' } });
      expect(outcome.usage.estimated).toBe(true);
      expect(outcome.usage.inputTokens + outcome.usage.outputTokens).toBeGreaterThanOrEqual(400);
      for (const receipt of receipts) expect(receipt.receipt.usage.estimated).toBe(true);

      // The first request's estimate is the BPE count of exactly what was sent.
      const started = events[0];
      if (started?.type !== 'Started') throw new Error('expected Started first');
      const count = (text: string) => o200kCounter.count(text);
      expect(receipts[0]?.receipt.usage).toEqual({
        inputTokens:
          count(started.systemPrompt) + count(JSON.stringify([readFileSpec()])) + count(started.task),
        outputTokens: count('{"path":"a.txt"}'),
        cachedInputTokens: 0,
        reasoningTokens: 0,
        estimated: true,
      });
      // Estimated usage is priced like reported usage: the cost is known, not silently 0.
      expect(outcome.costUsd).toBeGreaterThan(0);
    },
  );

  it('wallClockMs aborts a running tool through its signal, and the agent fails with timeout', async () => {
    const aborted = deferred();
    const stuck = {
      name: 'wait_forever',
      description: 'Waits until aborted.',
      parameters: { type: 'object', properties: {} },
      readOnly: true,
      execute: (_args: Record<string, unknown>, ctx: { signal: AbortSignal }) =>
        new Promise<{ ok: boolean; text: string }>((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            aborted.resolve();
            resolve({ ok: false, text: 'aborted' });
          });
        }),
    };
    const journal = new MemoryJournal();
    const outcome = await runAgent({
      agentId: 'tool-timeout',
      definition: makeDefinition(),
      task: 'Wait.',
      provider: new ScriptedProvider([{ toolCalls: [{ name: 'wait_forever' }] }]),
      model: 'test-model',
      registry: createToolRegistry([stuck]),
      cwd: tempDir(),
      journal,
      systemPrompt: 'S',
      limits: { wallClockMs: 100 },
    });
    await aborted.promise;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'timeout', error: { code: 'wall_clock' } });
    expect(eventsOf(journal.events, 'ToolResult')[0]).toMatchObject({
      ok: false,
      text: 'wait_forever was stopped: the agent ran out of time',
    });
  });

  it('wallClockMs aborts a request in flight: the server sees the connection close, the agent fails with timeout', async () => {
    // The time limit passes only once the request is at the server (fake setTimeout, advanced
    // then): with a real 100 ms limit a loaded machine could end the run before the request left,
    // and the server would wait for a connection that never came.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const arrived = deferred();
    const closed = deferred();
    const slow = createServer((req, res) => {
      req.resume();
      // Never answers: the agent must give up first.
      res.on('close', () => closed.resolve());
      arrived.resolve();
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const { port } = slow.address() as AddressInfo;
    try {
      const journal = new MemoryJournal();
      const run = runAgent({
        agentId: 'slow',
        definition: makeDefinition(),
        task: 'Say hello.',
        provider: new OpenAIProvider({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 }),
        model: MODEL,
        cwd: tempDir(),
        journal,
        systemPrompt: 'S',
        limits: { wallClockMs: 100 },
      });
      await arrived.promise;
      vi.advanceTimersByTime(100);
      const outcome = await run;
      await closed.promise;
      expect(outcome).toMatchObject({
        status: 'failed',
        reason: 'timeout',
        error: { code: 'wall_clock' },
        steps: 1,
      });
      expect(journal.events.at(-1)).toMatchObject({ type: 'Failed', reason: 'timeout' });
    } finally {
      vi.useRealTimers();
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });
});
