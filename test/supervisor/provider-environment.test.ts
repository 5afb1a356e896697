/**
 * A Supervisor given no `providers` picks one from the environment with the CLI's rule
 * (providerFromEnvironment), and announces a fallback to the simulated model.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { providerFromEnvironment } from '../../src/providers/environment.ts';
import { prepareSupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { startServer, type TestServer } from '../providers/helpers.ts';
import { runScript, simulatedEnv } from '../run-dir/helpers.ts';
import { fixtures } from './helpers.ts';

const KEYS = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY'] as const;

afterEach(() => {
  for (const key of KEYS) delete process.env[key];
});

describe('the provider rule shared by the CLI and the library', () => {
  it('OPENAI_API_KEY, then OPENAI_BASE_URL, then ANTHROPIC_API_KEY select a provider; blank counts as unset', () => {
    expect(providerFromEnvironment({})).toEqual({ name: 'simulated', variable: undefined });
    expect(providerFromEnvironment({ OPENAI_API_KEY: '  ' })).toEqual({
      name: 'simulated',
      variable: undefined,
    });
    expect(providerFromEnvironment({ ANTHROPIC_API_KEY: 'a', OPENAI_BASE_URL: 'http://x/v1' })).toEqual({
      name: 'openai',
      variable: 'OPENAI_BASE_URL',
    });
    expect(providerFromEnvironment({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'http://x/v1' })).toEqual({
      name: 'openai',
      variable: 'OPENAI_API_KEY',
    });
    expect(providerFromEnvironment({ ANTHROPIC_API_KEY: 'a' })).toEqual({
      name: 'anthropic',
      variable: 'ANTHROPIC_API_KEY',
    });
  });

  it('without `providers` the Supervisor takes the provider the environment selects, with its default model', () => {
    // `default` resolves to the provider's own default model at spawn (see providers/models.ts);
    // the OpenAI test below checks the model that reaches the server.
    process.env.ANTHROPIC_API_KEY = 'sk-ant-test';
    const anthropic = prepareSupervisorOptions({ journalDir: '/tmp/unused' });
    expect(anthropic.providers).toEqual({ anthropic: { kind: 'anthropic' } });
    expect(anthropic).toMatchObject({
      defaultProvider: 'anthropic',
      defaultModel: 'default',
      simulatedFallback: false,
    });
    delete process.env.ANTHROPIC_API_KEY;
    const simulated = prepareSupervisorOptions({ journalDir: '/tmp/unused' });
    expect(simulated.providers).toEqual({ simulated: { kind: 'simulated' } });
    expect(simulated.simulatedFallback).toBe(true);
    // Naming the simulated model is a choice, not a fallback: nothing to announce.
    const chosen = prepareSupervisorOptions({
      journalDir: '/tmp/unused',
      providers: { simulated: { kind: 'simulated' } },
    });
    expect(chosen.simulatedFallback).toBe(false);
  });
});

describe('a Supervisor without `providers`', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('runs its agents against the OpenAI-compatible server OPENAI_BASE_URL names, and announces nothing', async () => {
    server = await startServer((_req, res, index) => {
      const toolCall = {
        id: `call_${index}`,
        type: 'function',
        function: { name: 'complete_task', arguments: JSON.stringify({ result: { from: 'the server' } }) },
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${index}`,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: null, tool_calls: [toolCall] },
              finish_reason: 'tool_calls',
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
    process.env.OPENAI_BASE_URL = `${server.url}/v1`;
    const supervisor = new Supervisor({ threads: 1 });
    let announced = 0;
    supervisor.on('provider:simulated', () => {
      announced += 1;
    });
    try {
      const outcome = await supervisor.spawn('worker', { task: 'Report back.' }).result;
      expect(outcome).toMatchObject({ status: 'completed', result: { from: 'the server' } });
    } finally {
      await supervisor.close();
    }
    expect(announced).toBe(0);
    expect(server.received.length).toBeGreaterThanOrEqual(1);
    for (const request of server.received) expect(request.json.model).toBe('gpt-4.1-mini');
  });

  it('falls back to the simulated model with one event per supervisor and one process warning in all', async () => {
    const { code, stdout, stderr } = await runScript(path.join(fixtures, 'fallback-script.ts'), {
      cwd: process.cwd(),
      env: simulatedEnv(),
    });
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ events: [1, 1], statuses: Array(4).fill('completed') });
    const warnings = stderr.match(
      /\[TROUPE_SIMULATED_MODEL\] TroupeWarning: troupe is using the simulated model/g,
    );
    expect(warnings).toHaveLength(1);
  });
});
