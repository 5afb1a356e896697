import { mkdtempSync, rmSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentOutcome } from '../../../src/loop/types.ts';
import { MAX_PROVIDER_PAUSE_MS } from '../../../src/providers/constants.ts';
import type { AgentStarted } from '../../../src/supervisor/events.ts';
import { RedisSupervisor, type RedisSupervisorOptions } from '../../../src/supervisor/redis-supervisor.ts';
import { deferred, startServer } from '../../providers/helpers.ts';
import {
  chainProblem,
  definition,
  killWorkers,
  nextEvent,
  recordedSteps,
  recordToolModule,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  stepperProvider,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-test';
/** Agents each worker runs at once: 2 x CONCURRENCY agents running together occupy both workers. */
const CONCURRENCY = 10;

/** An OpenAI chat completion that calls one tool. */
function toolCallCompletion(name: string, args: Record<string, unknown>): string {
  return JSON.stringify({
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: 0,
    model: 'mock-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: `call_${name}`, type: 'function', function: { name, arguments: JSON.stringify(args) } },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
}

/** First request of an agent: record a step; after a tool result: complete. */
function answer(res: ServerResponse, body: string): void {
  const messages = (JSON.parse(body) as { messages?: { role: string }[] }).messages ?? [];
  const toolResults = messages.filter((message) => message.role === 'tool').length;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    toolResults === 0
      ? toolCallCompletion('record_step', { note: 'first step' })
      : toolCallCompletion('complete_task', { result: { ok: true } }),
  );
}

describe(`the redis backend with two worker processes${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let workers: TestWorker[] = [];
  let queueName: string;
  let dir: string;
  let recordFile: string;
  let queue: Queue;
  const supervisors: RedisSupervisor[] = [];
  const sessionProviderModule = path.join(repoRoot, 'test/fixtures/supervisor/session-provider.ts');
  const faultToolsModule = path.join(repoRoot, 'test/fixtures/supervisor/fault-tools.ts');

  beforeAll(async () => {
    server = await TestRedis.start();
    queueName = uniqueName('cluster');
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-cluster-'));
    recordFile = path.join(dir, 'steps.tsv');
    const args = ['--queue', queueName, '--prefix', PREFIX, '--concurrency', String(CONCURRENCY)];
    workers = await Promise.all([
      startWorker(server.url, args, { TROUPE_SCALEOUT_RECORD: recordFile }),
      startWorker(server.url, args, { TROUPE_SCALEOUT_RECORD: recordFile }),
    ]);
    queue = new Queue(queueName, {
      connection: { url: server.url, maxRetriesPerRequest: null },
      prefix: PREFIX,
    });
  });

  afterEach(async () => {
    await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.close()));
  });

  afterAll(async () => {
    await queue?.close();
    await killWorkers(workers);
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function supervisor(options: RedisSupervisorOptions): RedisSupervisor {
    const created = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      toolModules: [{ module: recordToolModule }],
      compat: false,
      cwd: dir,
      ...options,
    });
    supervisors.push(created);
    return created;
  }

  async function jobState(agentId: string): Promise<string | undefined> {
    return (await Job.fromId(queue, agentId))?.getState();
  }

  it('fans 100 agents out over both workers and collects every result from job state', async () => {
    const sup = supervisor({
      providers: { stepper: stepperProvider(2, 5) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
    });
    const hosts = new Set<number>();
    sup.on('agent:started', (event: AgentStarted) => hosts.add(event.hostId));
    const specs = Array.from({ length: 100 }, (_, index) => ({
      agent: 'stepper',
      task: `Agent ${index} of 100.`,
    }));
    const results = await sup.fanOut(specs).all();

    expect(results).toHaveLength(100);
    for (const [index, result] of results.entries()) {
      expect(result.spec.task).toBe(`Agent ${index} of 100.`);
      expect(result.outcome).toMatchObject({
        status: 'completed',
        agentId: result.agentId,
        result: { steps: 2 },
      });
    }
    expect([...hosts].sort()).toEqual(workers.flatMap((worker) => worker.ids).sort());
    const ids = new Set(results.map((result) => result.agentId));
    const steps = recordedSteps(recordFile).filter(([agentId]) => ids.has(agentId));
    expect(steps).toHaveLength(200);
    expect(new Set(steps.map(([agentId, note]) => `${agentId} ${note}`)).size).toBe(200);
    const journal = await sup.journal(results[0]?.agentId ?? '');
    expect(chainProblem(journal)).toBeUndefined();
    expect(journal.at(-1)?.type).toBe('Completed');
  });

  it('delivers instructions through the inbox, parks a long wait and promotes it on the next instruction', async () => {
    const sup = supervisor({
      providers: { simulated: { kind: 'simulated', options: { waits: 2 } } },
      definitions: [definition('waiter', { tools: ['wait_for_instruction'] })],
      parkAfterMs: 300,
    });
    const started: AgentStarted[] = [];
    sup.on('agent:started', (event) => started.push(event));
    let restarts = 0;
    sup.on('agent:restarted', () => {
      restarts += 1;
    });
    const handle = sup.spawn('waiter', { task: 'Follow the instructions you are sent.' });
    const parked = nextEvent(sup, 'agent:parked', (event) => {
      return event.agentId === handle.id && event.index === 1;
    });
    // Sent before the agent waits: queued in the inbox, never lost.
    handle.send('first: read the plan');
    await parked;
    expect(await jobState(handle.id)).toBe('delayed');

    expect(await sup.instruct(handle.id, 'second: finish up')).toBe(1);
    const outcome = await handle.result;

    expect(outcome.status).toBe('completed');
    const journal = await sup.journal(handle.id);
    expect(chainProblem(journal)).toBeUndefined();
    const instructed = journal.filter((event) => event.type === 'Instructed');
    expect(instructed.map((event) => event.type === 'Instructed' && [event.index, event.text])).toEqual([
      [0, 'first: read the plan'],
      [1, 'second: finish up'],
    ]);
    const waitResults = journal.filter(
      (event) => event.type === 'ToolResult' && event.name === 'wait_for_instruction',
    );
    expect(waitResults.map((event) => event.type === 'ToolResult' && event.text)).toEqual([
      'Instruction: first: read the plan',
      'Instruction: second: finish up',
    ]);
    expect(journal.some((event) => event.type === 'Resumed')).toBe(true);
    expect(started.filter((event) => event.agentId === handle.id).at(-1)?.resumed).toBe(true);
    expect(restarts).toBe(0);
  });

  it('parks a wait that has a limit and wakes it at its deadline with no instruction', async () => {
    const sup = supervisor({
      providers: { simulated: { kind: 'simulated', options: { waits: 1 } } },
      definitions: [
        definition('patient', {
          tools: ['wait_for_instruction'],
          toolConfig: {
            wait_for_instruction: { retry: { maxRetries: 0, baseDelayMs: 2000, maxDelayMs: 2000 } },
          },
        }),
      ],
      parkAfterMs: 200,
    });
    const handle = sup.spawn('patient', { task: 'Wait for an instruction if one comes.' });
    const parked = nextEvent(sup, 'agent:parked', (event) => event.agentId === handle.id);
    await parked;
    const outcome = await handle.result;

    expect(outcome.status).toBe('completed');
    const journal = await sup.journal(handle.id);
    expect(journal.some((event) => event.type === 'Instructed')).toBe(false);
    const waitResult = journal.find(
      (event) => event.type === 'ToolResult' && event.name === 'wait_for_instruction',
    );
    expect(waitResult?.type === 'ToolResult' && waitResult.text).toContain('No instruction arrived');
  });

  it('runs a session: it parks between messages, wakes for the next, and keeps its history', async () => {
    const sup = supervisor({
      providers: { session: { kind: 'module', module: sessionProviderModule } },
      defaultProvider: 'session',
      definitions: [definition('chatter', { tools: ['complete_task'] })],
      parkAfterMs: 100,
    });
    const chat = sup.session('chatter');
    const parked = nextEvent(sup, 'agent:parked', (event) => event.agentId === chat.id);
    expect(await chat.send('hello')).toEqual({ turn: 0, answer: 'turn 1: hello (earlier: )' });
    await parked;
    // The job left its worker while it waited: the next message wakes it, resumed from its journal.
    expect(await chat.send('again')).toEqual({ turn: 1, answer: 'turn 2: again (earlier: hello)' });
    expect(await chat.close()).toMatchObject({
      status: 'completed',
      answer: 'turn 2: again (earlier: hello)',
    });
    const journal = await sup.journal(chat.id);
    expect(journal.filter((event) => event.type === 'TurnAnswered')).toHaveLength(2);
    expect(
      journal
        .filter((event) => event.type === 'Instructed')
        .map((event) => event.type === 'Instructed' && event.text),
    ).toEqual(['hello', 'again']);
  });

  it('cancels a session turn alone: its send rejects, and the session answers the next message', async () => {
    const sup = supervisor({
      providers: { session: { kind: 'module', module: sessionProviderModule } },
      defaultProvider: 'session',
      toolModules: [{ module: faultToolsModule, export: 'faultTools' }],
      definitions: [definition('holder', { tools: ['hold'] })],
      parkAfterMs: 100,
    });
    // Listened to before the session's job exists: a job carries the signals wanted when it is added.
    let chat: ReturnType<typeof sup.session> | undefined;
    sup.on('agent:tool', (event) => {
      // `hold` waits until its call is cancelled: only the turn's cancel ends it.
      if (event.agentId === chat?.id && event.phase === 'started') void chat.cancelTurn('enough');
    });
    chat = sup.session('holder');
    await expect(chat.send('call hold')).rejects.toMatchObject({
      code: 'turn_cancelled',
      fields: { turn: 0, reason: 'enough' },
    });
    expect(await chat.send('after')).toEqual({ turn: 1, answer: 'turn 2: after (earlier: call hold)' });
    expect(await chat.close()).toMatchObject({ status: 'completed' });
    const journal = await sup.journal(chat.id);
    expect(journal.filter((event) => event.type === 'TurnCancelled')).toMatchObject([
      { turn: 0, reason: 'enough' },
    ]);
  });

  it('cancels a parked agent from the supervisor: the job wakes and the agent ends Failed(cancelled)', async () => {
    const sup = supervisor({
      providers: { simulated: { kind: 'simulated', options: { waits: 1 } } },
      definitions: [definition('waiter', { tools: ['wait_for_instruction'] })],
      parkAfterMs: 100,
    });
    const handle = sup.spawn('waiter', { task: 'Wait for an instruction.' });
    await nextEvent(sup, 'agent:parked', (event) => event.agentId === handle.id);
    handle.cancel('no longer needed');
    const outcome = await handle.result;

    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    const journal = await sup.journal(handle.id);
    expect(journal.at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
    expect(await jobState(handle.id)).toBe('completed');
  });

  it("cancels a running agent whose cancel was announced while its worker's subscription was down", async () => {
    const sup = supervisor({
      // One model request that would take ten minutes: only the cancel can end the agent.
      providers: { simulated: { kind: 'simulated', options: { rounds: 1, latency: 600_000 } } },
      definitions: [definition('sleeper', { tools: ['record_step', 'complete_task'] })],
      // Only the worker may end it, not the supervisor's grace timer.
      graceMs: 600_000,
    });
    const handle = sup.spawn('sleeper', { task: 'Take your time.' });
    await nextEvent(sup, 'agent:started', (event) => event.agentId === handle.id);
    // Drop the workers' pub/sub connections: the announcement below reaches no worker; they
    // reconnect on their own a few ms later.
    const admin = new Redis(server.url);
    try {
      const clients = String(await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
      for (const line of clients.split('\n')) {
        if (!line.includes('name=troupe-worker')) continue;
        const id = /(?:^|\s)id=(\d+)/.exec(line)?.[1];
        if (id !== undefined) await admin.call('CLIENT', 'KILL', 'ID', id);
      }
    } finally {
      admin.disconnect();
    }
    handle.cancel('no longer needed');
    const outcome = await handle.result;

    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    const journal = await sup.journal(handle.id);
    expect(journal.at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
  });

  it('runs host tools on the supervisor for agents on the workers', async () => {
    const calls: string[] = [];
    const sup = supervisor({
      providers: { simulated: { kind: 'simulated', options: { rounds: 1 } } },
      definitions: [definition('asker', { tools: ['lookup'] })],
      hostTools: {
        lookup: {
          description: 'Look something up on the supervisor.',
          parameters: {
            type: 'object',
            properties: { query: { type: 'string' } },
            additionalProperties: false,
          },
          readOnly: true,
          execute: (_args, ctx) => {
            calls.push(ctx.agentId);
            return 'answer 42';
          },
        },
      },
    });
    const handle = sup.spawn('asker', { task: 'Look it up.' });
    const outcome = await handle.result;

    expect(outcome.status).toBe('completed');
    expect(calls).toEqual([handle.id]);
    const journal = await sup.journal(handle.id);
    const result = journal.find((event) => event.type === 'ToolResult' && event.name === 'lookup');
    expect(result).toMatchObject({ ok: true, text: 'answer 42' });
  });

  it('lets an agent on a worker spawn and await a subagent through the supervisor', async () => {
    const sup = supervisor({
      providers: { stepper: stepperProvider(2) },
      definitions: [
        definition('lead', { tools: ['spawn_agent', 'await_agents', 'complete_task'] }),
        definition('stepper', { tools: ['record_step', 'complete_task'] }),
      ],
    });
    const spawned: { agentId: string; parentId: string | undefined }[] = [];
    sup.on('agent:spawned', (event) => spawned.push({ agentId: event.agentId, parentId: event.parentId }));
    const lead = sup.spawn('lead', { task: 'Delegate the work to one subagent.' });
    const outcome = await lead.result;

    expect(outcome.status).toBe('completed');
    const child = spawned.find((event) => event.parentId === lead.id);
    expect(child).toBeDefined();
    const childOutcome = await sup.handle(child?.agentId ?? '')?.result;
    expect(childOutcome).toMatchObject({ status: 'completed', result: { steps: 2 } });
    const children = outcome.status === 'completed' ? JSON.stringify(outcome.result) : '';
    expect(children).toContain(child?.agentId);
    expect(sup.treeUsage(lead.id)?.usage.inputTokens).toBe(
      outcome.usage.inputTokens + (childOutcome?.usage.inputTokens ?? 0),
    );
  });

  it('treats a re-submitted agent id as the same job: the finished outcome comes back without a new run', async () => {
    const options = {
      providers: { stepper: stepperProvider(1) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
    };
    const id = uniqueName('resubmitted');
    const first = await supervisor(options).spawn('stepper', { id, task: 'Do it once.' }).result;
    const stepsBefore = recordedSteps(recordFile).filter(([agentId]) => agentId === id).length;
    const again = await supervisor(options).spawn('stepper', { id, task: 'Do it once.' }).result;

    expect(first.status).toBe('completed');
    expect(again).toEqual(first);
    expect(recordedSteps(recordFile).filter(([agentId]) => agentId === id)).toHaveLength(stepsBefore);
  });

  it('close() cancels every agent and leaves no job active, waiting or parked', async () => {
    const sup = supervisor({
      providers: { simulated: { kind: 'simulated', options: { waits: 1 } } },
      definitions: [definition('waiter', { tools: ['wait_for_instruction'] })],
      parkAfterMs: 100,
    });
    const handles = Array.from({ length: 3 }, (_, index) =>
      sup.spawn('waiter', { task: `Waiter ${index}.` }),
    );
    await Promise.all(
      handles.map((handle) => nextEvent(sup, 'agent:parked', (event) => event.agentId === handle.id)),
    );
    const running = sup.spawn('waiter', { task: 'Late waiter.' });
    await sup.close();

    const outcomes: AgentOutcome[] = await Promise.all([...handles, running].map((handle) => handle.result));
    for (const outcome of outcomes) expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    const counts = await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized');
    expect(counts).toEqual({ active: 0, waiting: 0, delayed: 0, prioritized: 0 });
  });

  it("pauses a provider for the agents on every worker when one agent's request gets a 429", async () => {
    const agents = 2 * CONCURRENCY;
    const firstRequests: { res: ServerResponse; body: string }[] = [];
    const release = deferred();
    // startServer reads each body before calling the handler; it is in `received[index]`.
    const server429: Awaited<ReturnType<typeof startServer>> = await startServer((_req, res, index) => {
      const body = server429.received[index]?.body ?? '{}';
      if (index >= agents) {
        answer(res, body);
        return;
      }
      // Every agent's first request is held until all have arrived: then both workers are busy.
      firstRequests.push({ res, body });
      if (firstRequests.length < agents) return;
      const [limited, ...held] = firstRequests;
      limited?.res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
      limited?.res.end(
        JSON.stringify({ error: { message: 'Rate limit reached', type: 'rate_limit_error' } }),
      );
      void release.promise.then(() => {
        for (const request of held) answer(request.res, request.body);
      });
    });
    try {
      const sup = supervisor({
        providers: {
          openai: { kind: 'openai', options: { baseURL: `${server429.url}/v1`, apiKey: 'test-key' } },
        },
        defaultModel: 'mock-model',
        definitions: [definition('caller', { tools: ['record_step', 'complete_task'] })],
      });
      const pausedOn = new Set<number>();
      sup.on('provider:paused', (event) => pausedOn.add(event.hostId));
      const backoff = nextEvent(sup, 'provider:backoff');
      const results = sup.fanOut(
        Array.from({ length: agents }, (_, index) => ({ agent: 'caller', task: `Call ${index}.` })),
      );
      expect(await backoff).toEqual({ provider: 'openai', retryAfterMs: 3000 });
      release.resolve();
      const outcomes = (await results.all()).map((result) => result.outcome);

      for (const outcome of outcomes)
        expect(outcome).toMatchObject({ status: 'completed', result: { ok: true } });
      expect([...pausedOn].sort()).toEqual(workers.flatMap((worker) => worker.ids).sort());
    } finally {
      await server429.close();
    }
  });

  it('caps the shared pause at MAX_PROVIDER_PAUSE_MS when a 429 asks for days', async () => {
    // Its own provider key: the pause it leaves in Redis holds no other test's agents.
    const providerKey = uniqueName('capped');
    const limited = await startServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '999999' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }));
    });
    const redis = new Redis(server.url);
    try {
      const sup = supervisor({
        providers: {
          [providerKey]: { kind: 'openai', options: { baseURL: `${limited.url}/v1`, apiKey: 'test-key' } },
        },
        defaultProvider: providerKey,
        defaultModel: 'mock-model',
        definitions: [definition('caller', { tools: ['record_step', 'complete_task'] })],
      });
      const backoff = nextEvent(sup, 'provider:backoff');
      const outcome = await sup.spawn('caller', { task: 'Call once.' }).result;
      expect(outcome.status === 'failed' && outcome.error.code).toBe('rate_limited');
      expect(await backoff).toEqual({ provider: providerKey, retryAfterMs: MAX_PROVIDER_PAUSE_MS });
      const ttl = await redis.pttl(`${PREFIX}:limit:${providerKey}:pause`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(MAX_PROVIDER_PAUSE_MS);
    } finally {
      redis.disconnect();
      await limited.close();
    }
  });
});
