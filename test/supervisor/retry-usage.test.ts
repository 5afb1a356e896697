/**
 * A retry (`retryOf`) continues a fork of the failed attempt's journal, so its outcome's usage
 * holds the failed attempt's requests as well as its own. The run's totals (`runUsage`) count each
 * request the server was asked once: the retry adds only what it spent beyond the fork.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../src/loop/usage-record.ts';
import type { AgentUsage } from '../../src/supervisor/events.ts';
import type { SupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { SPEND } from '../fixtures/supervisor/spent-provider.ts';
import { fixtures, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

const REQUEST_TOKENS = SPEND.usage.inputTokens + SPEND.usage.outputTokens;
const REQUEST_COST =
  (SPEND.usage.inputTokens * SPEND.price.inputPerMTok +
    SPEND.usage.outputTokens * SPEND.price.outputPerMTok) /
  1e6;

function countedSupervisor(log: string, options: SupervisorOptions = {}): Supervisor {
  return new Supervisor({
    cwd: tempDir(),
    journalDir: tempDir(),
    threads: 1,
    providers: {
      counted: { kind: 'module', module: path.join(fixtures, 'counted-provider.ts'), options: { log } },
    },
    defaultProvider: 'counted',
    toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    ...options,
  });
}

/** Requests the provider served, from its log. */
function served(log: string): number {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;
}

describe.each([
  ['without runLimits (each outcome counted at its end)', {}],
  ['with runLimits (each receipt counted as it comes)', { runLimits: { maxTotalTokens: 1_000_000 } }],
])('runUsage across a retry, %s', (_name, options: SupervisorOptions) => {
  it('counts the failed attempt once: the retry adds only the requests it made', async () => {
    const log = path.join(tempDir(), 'requests.log');
    supervisor = countedSupervisor(log, options);
    // Two requests (note, then nap), then out of steps.
    const first = await supervisor.spawn('worker', { task: 'call nap', id: 'first', limits: { maxSteps: 2 } })
      .result;
    expect(first).toMatchObject({ status: 'failed', steps: 2 });
    expect(served(log)).toBe(2);
    // The retry continues from the fork: one more request (complete_task).
    const retry = await supervisor.spawn('worker', { task: 'call nap', id: 'retry', retryOf: 'first' })
      .result;
    expect(retry).toMatchObject({ status: 'completed', steps: 3 });
    expect(served(log)).toBe(3);
    // The retry's outcome carries its whole history, the forked requests included...
    expect(retry.usage.inputTokens).toBe(3 * SPEND.usage.inputTokens);
    expect(retry.costUsd).toBeCloseTo(3 * REQUEST_COST, 12);
    // ...and says which part it inherited.
    expect(retry.inherited?.usage).toMatchObject({
      inputTokens: 2 * SPEND.usage.inputTokens,
      outputTokens: 2 * SPEND.usage.outputTokens,
    });
    expect(retry.inherited?.costUsd).toBeCloseTo(2 * REQUEST_COST, 12);
    expect(first.inherited).toBeUndefined();
    // The run counted each request the server served once.
    expect(supervisor.runUsage.usedTokens).toBe(3 * REQUEST_TOKENS);
    expect(supervisor.runUsage.usedCostUsd).toBeCloseTo(3 * REQUEST_COST, 12);
  });
});

describe('runUsage with runLimits when a receipt never reached the Supervisor', () => {
  it("counts, at the agent's end, what its outcome says it spent beyond the receipts counted", async () => {
    const log = path.join(tempDir(), 'requests.log');
    supervisor = countedSupervisor(log, {
      runLimits: { maxTotalTokens: 1_000_000 },
      restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const crashes: string[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event.cause.code));
    const receipts: (number | undefined)[] = [];
    supervisor.on('agent:usage', (event) => {
      if (event.unreported === undefined) receipts.push(event.step);
    });
    // note, exit_after_receipt, then complete_task: its receipt is journalled, and the thread
    // dies before the signals of its event-loop turn are sent (with this in-memory model, the
    // receipts of all three requests: the turn never yields to a timer).
    const outcome = await supervisor.spawn('worker', { task: 'call exit_after_receipt' }).result;
    expect(crashes).toEqual(['thread_crashed']);
    expect(outcome).toMatchObject({ status: 'completed' });
    const requests = served(log);
    expect(receipts.length).toBeLessThan(requests);
    expect(outcome.usage.inputTokens).toBe(requests * SPEND.usage.inputTokens);
    expect(supervisor.runUsage.usedTokens).toBe(requests * REQUEST_TOKENS);
    expect(supervisor.runUsage.usedCostUsd).toBeCloseTo(requests * REQUEST_COST, 12);
  });
});

describe.each([
  ['without runLimits', {}],
  ['with runLimits', { runLimits: { maxTotalTokens: 1_000_000 } }],
])('the usage sink when a receipt never reached the Supervisor, %s', (_name, options: SupervisorOptions) => {
  it("is given, at the agent's end, one record of what its outcome says it spent beyond the records given", async () => {
    const log = path.join(tempDir(), 'requests.log');
    const records: UsageRecord[] = [];
    supervisor = countedSupervisor(log, {
      ...options,
      usageSink: (record) => {
        records.push(record);
      },
      restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const receipts: (number | undefined)[] = [];
    supervisor.on('agent:usage', (event) => {
      if (event.unreported === undefined) receipts.push(event.step);
    });
    // As above: the thread dies with receipts journalled and never signalled.
    const outcome = await supervisor.spawn('worker', { task: 'call exit_after_receipt' }).result;
    expect(outcome).toMatchObject({ status: 'completed' });
    const requests = served(log);
    expect(receipts.length).toBeLessThan(requests);
    const perRequest = records.filter((record) => record.unreported === undefined);
    const unreported = records.filter((record) => record.unreported === true);
    expect(perRequest).toHaveLength(receipts.length);
    expect(unreported).toHaveLength(1);
    expect(unreported[0]).toMatchObject({
      agentId: outcome.agentId,
      step: undefined,
      latencyMs: 0,
      usage: {
        inputTokens: (requests - receipts.length) * SPEND.usage.inputTokens,
        outputTokens: (requests - receipts.length) * SPEND.usage.outputTokens,
      },
    });
    // The records add up to the outcome, whatever reached the Supervisor.
    const sum = (value: (record: UsageRecord) => number): number =>
      records.reduce((total, record) => total + value(record), 0);
    expect(sum((record) => record.usage.inputTokens)).toBe(outcome.usage.inputTokens);
    expect(sum((record) => record.usage.outputTokens)).toBe(outcome.usage.outputTokens);
    expect(sum((record) => record.costUsd ?? 0)).toBeCloseTo(requests * REQUEST_COST, 12);
  });

  it('gives no extra record when every receipt came', async () => {
    const log = path.join(tempDir(), 'requests.log');
    const records: UsageRecord[] = [];
    supervisor = countedSupervisor(log, {
      ...options,
      usageSink: (record) => {
        records.push(record);
      },
    });
    const first = await supervisor.spawn('worker', { task: 'call nap', id: 'first', limits: { maxSteps: 2 } })
      .result;
    const retry = await supervisor.spawn('worker', { task: 'call nap', id: 'retry', retryOf: 'first' })
      .result;
    expect(first.status).toBe('failed');
    expect(retry.status).toBe('completed');
    // One record per request served: the retry's inherited requests are not given again.
    expect(records).toHaveLength(served(log));
    expect(records.every((record) => record.unreported === undefined)).toBe(true);
  });
});

describe.each([
  ['with nothing else asking for receipts', {}],
  ['with a usage sink', { usageSink: () => {} }],
])('usage events when a receipt never reached the Supervisor, %s', (_name, options: SupervisorOptions) => {
  it("end with one `unreported` event of what the agent's outcome holds beyond the events emitted", async () => {
    const log = path.join(tempDir(), 'requests.log');
    supervisor = countedSupervisor(log, {
      ...options,
      restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const events: AgentUsage[] = [];
    supervisor.on('agent:usage', (event) => events.push(event));
    const handleEvents: AgentUsage[] = [];
    // As above: the thread dies with receipts journalled and never signalled.
    const handle = supervisor.spawn('worker', { task: 'call exit_after_receipt' });
    handle.on('usage', (event) => handleEvents.push(event));
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'completed' });
    const requests = served(log);
    const perRequest = events.filter((event) => event.unreported === undefined);
    expect(perRequest.length).toBeLessThan(requests);
    const unreported = events.filter((event) => event.unreported === true);
    expect(unreported).toHaveLength(1);
    expect(unreported[0]).toMatchObject({
      agentId: outcome.agentId,
      step: undefined,
      round: outcome.rounds,
      latencyMs: 0,
      inputTokens: (requests - perRequest.length) * SPEND.usage.inputTokens,
      outputTokens: (requests - perRequest.length) * SPEND.usage.outputTokens,
      usage: {
        inputTokens: (requests - perRequest.length) * SPEND.usage.inputTokens,
        outputTokens: (requests - perRequest.length) * SPEND.usage.outputTokens,
      },
    });
    // The handle hears the same events, the top-up included.
    expect(handleEvents).toEqual(events);
    // The events add up to the outcome, whatever reached the Supervisor.
    const sum = (value: (event: AgentUsage) => number): number =>
      events.reduce((total, event) => total + value(event), 0);
    expect(sum((event) => event.inputTokens)).toBe(outcome.usage.inputTokens);
    expect(sum((event) => event.outputTokens)).toBe(outcome.usage.outputTokens);
    expect(sum((event) => event.costUsd ?? 0)).toBeCloseTo(requests * REQUEST_COST, 12);
  });

  it('end with no `unreported` event when every receipt came', async () => {
    const log = path.join(tempDir(), 'requests.log');
    supervisor = countedSupervisor(log, options);
    const events: AgentUsage[] = [];
    supervisor.on('agent:usage', (event) => events.push(event));
    const outcome = await supervisor.spawn('worker', { task: 'call nap' }).result;
    expect(outcome.status).toBe('completed');
    expect(events).toHaveLength(served(log));
    expect(events.every((event) => event.unreported === undefined)).toBe(true);
  });
});

describe("the tree usage of a retried subagent's parent", () => {
  it('counts the failed attempt once: the retry adds only the requests it made', async () => {
    const log = path.join(tempDir(), 'requests.log');
    supervisor = countedSupervisor(log);
    const boss = await supervisor.spawn('worker', { task: 'call nap', id: 'boss' }).result;
    expect(boss.status).toBe('completed');
    const bossRequests = served(log);
    // A subagent of boss fails after two requests; its retry, also boss's, makes one more.
    const first = await supervisor.spawn('worker', {
      task: 'call nap',
      id: 'first',
      parent: 'boss',
      limits: { maxSteps: 2 },
    }).result;
    expect(first.status).toBe('failed');
    const retry = await supervisor.spawn('worker', {
      task: 'call nap',
      id: 'retry',
      parent: 'boss',
      retryOf: 'first',
    }).result;
    expect(retry).toMatchObject({ status: 'completed', steps: 3 });
    const requests = served(log);
    expect(requests).toBe(bossRequests + 3);
    // The retry's own tree holds its whole history, as its outcome does...
    expect(supervisor.treeUsage('retry')?.usage.inputTokens).toBe(3 * SPEND.usage.inputTokens);
    // ...and boss's tree each request the server served once.
    const tree = supervisor.treeUsage('boss');
    expect(tree?.usage.inputTokens).toBe(requests * SPEND.usage.inputTokens);
    expect(tree?.usage.outputTokens).toBe(requests * SPEND.usage.outputTokens);
    expect(tree?.costUsd).toBeCloseTo(requests * REQUEST_COST, 12);
  });
});
