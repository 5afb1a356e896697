/** Model settings: reading, merging, and how each provider sends them (against a local server). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import {
  mergeModelSettings,
  prepareModelSettings,
  readModelSettings,
} from '../../src/providers/model-settings.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import { collect, replay, startServer, type TestServer, terminal, turnRequest } from './helpers.ts';

const STREAMS = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/corpus/provider-streams',
);
const OPENAI_TEXT = readFileSync(path.join(STREAMS, 'openai-chat-stream-text.sse'));
const ANTHROPIC_TEXT = readFileSync(path.join(STREAMS, 'anthropic-messages-stream-text.sse'));

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(body: Buffer) {
  server = await startServer((_req, res, index) => replay(res, body, 'text/event-stream', index + 1));
  return server;
}

describe('readModelSettings', () => {
  it('reads every setting and turns one stop sequence into a list', () => {
    const { settings, problems } = readModelSettings({
      temperature: 0.3,
      topP: 0.9,
      topK: 40,
      maxOutputTokens: 2048,
      reasoningEffort: 'high',
      stop: 'END',
      seed: 7,
      presencePenalty: -0.5,
      frequencyPenalty: 1.5,
    });
    expect(problems).toEqual([]);
    expect(settings).toEqual({
      temperature: 0.3,
      topP: 0.9,
      topK: 40,
      maxOutputTokens: 2048,
      reasoningEffort: 'high',
      stop: ['END'],
      seed: 7,
      presencePenalty: -0.5,
      frequencyPenalty: 1.5,
    });
  });

  it('reports each bad value with its path and leaves it out', () => {
    const { settings, problems } = readModelSettings({
      temperature: 3,
      topP: 0,
      maxOutputTokens: 1.5,
      reasoningEffort: 'extreme',
      stop: ['ok', ''],
      seed: 'x',
    });
    expect(settings).toEqual({});
    expect(problems.map((problem) => [problem.path, problem.kind])).toEqual([
      [['temperature'], 'invalid'],
      [['topP'], 'invalid'],
      [['maxOutputTokens'], 'invalid'],
      [['reasoningEffort'], 'invalid'],
      [['stop', 1], 'invalid'],
      [['seed'], 'invalid'],
    ]);
    expect(problems[0]?.message).toBe('Expected `temperature` to be a number from 0 to 2, got `3` (number)');
    expect(problems[3]?.message).toContain('`none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`');
  });

  it('calls an unknown key unknown, with a hint for a near miss', () => {
    const { problems } = readModelSettings({ max_output_tokens: 10, colour: 'red' });
    expect(problems.map((problem) => problem.kind)).toEqual(['unknown', 'unknown']);
    expect(problems[0]?.message).toContain('did you mean `maxOutputTokens`?');
  });

  it('refuses settings given in code with every problem named, unknown keys included', () => {
    expect(() => prepareModelSettings({ temprature: 1, topP: 2 }, 'modelSettings')).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        fields: expect.objectContaining({ option: 'modelSettings' }),
        message: expect.stringMatching(/modelSettings\.temprature: .*temperature.*modelSettings\.topP/),
      }),
    );
    expect(prepareModelSettings(undefined, 'modelSettings')).toEqual({});
  });
});

describe('mergeModelSettings', () => {
  it('lets a later layer win key by key and keeps unset keys of earlier ones', () => {
    expect(
      mergeModelSettings(
        { temperature: 1, maxOutputTokens: 100, stop: ['a', 'b'] },
        undefined,
        { temperature: 0.5 },
        { stop: ['c'], temperature: undefined },
      ),
    ).toEqual({ temperature: 0.5, maxOutputTokens: 100, stop: ['c'] });
  });
});

describe('openai sends model settings', () => {
  it('maps every supported setting to its Chat Completions parameter', async () => {
    const { url, received } = await serve(OPENAI_TEXT);
    const provider = new OpenAIProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 });
    await collect(
      provider.turn(
        turnRequest({
          temperature: 0.1,
          topP: 0.8,
          maxOutputTokens: 64,
          reasoningEffort: 'minimal',
          stop: ['###'],
          seed: 42,
          presencePenalty: 0.5,
          frequencyPenalty: -0.5,
        }),
      ),
    );
    expect(received[0]?.json).toMatchObject({
      temperature: 0.1,
      top_p: 0.8,
      max_completion_tokens: 64,
      reasoning_effort: 'minimal',
      stop: ['###'],
      seed: 42,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
    });
  });

  it('refuses topK and more than four stop sequences before sending anything', async () => {
    const { url, received } = await serve(OPENAI_TEXT);
    const provider = new OpenAIProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 });
    expect(provider.checkModelSettings({ topK: 5, stop: ['a', 'b', 'c', 'd', 'e'] })).toEqual([
      expect.objectContaining({ setting: 'topK', kind: 'unsupported' }),
      expect.objectContaining({ setting: 'stop', kind: 'unsupported' }),
    ]);
    const end = terminal(await collect(provider.turn(turnRequest({ topK: 5 }))));
    expect(end.type === 'error' && end.error).toMatchObject({
      code: 'bad_request',
      fields: { provider: 'openai', setting: 'topK', topK: 5 },
    });
    expect(received).toHaveLength(0);
  });
});

describe('anthropic sends model settings', () => {
  it('maps temperature, top_p, top_k, max_tokens and stop_sequences, and drops the seed', async () => {
    const { url, received } = await serve(ANTHROPIC_TEXT);
    const provider = new AnthropicProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 });
    const settings = { temperature: 0.4, topP: 0.7, topK: 20, maxOutputTokens: 500, stop: ['END'], seed: 3 };
    expect(provider.checkModelSettings(settings)).toEqual([
      expect.objectContaining({ setting: 'seed', kind: 'dropped' }),
    ]);
    await collect(provider.turn(turnRequest({ model: 'claude-sonnet-4-5', ...settings })));
    const body = received[0]?.json ?? {};
    expect(body).toMatchObject({
      temperature: 0.4,
      top_p: 0.7,
      top_k: 20,
      max_tokens: 500,
      stop_sequences: ['END'],
    });
    expect(body.seed).toBeUndefined();
  });

  it('refuses what the Messages API refuses: temperature over 1, penalties, sampling with thinking', () => {
    const provider = new AnthropicProvider({ baseURL: 'http://127.0.0.1:9', apiKey: 'k' });
    const unsupported = (settings: Parameters<typeof provider.checkModelSettings>[0]) =>
      provider
        .checkModelSettings(settings)
        .filter((issue) => issue.kind === 'unsupported')
        .map((issue) => issue.setting);
    expect(unsupported({ temperature: 1.5 })).toEqual(['temperature']);
    expect(unsupported({ presencePenalty: 1, frequencyPenalty: 1 })).toEqual([
      'presencePenalty',
      'frequencyPenalty',
    ]);
    expect(unsupported({ reasoningEffort: 'high', temperature: 0.2, topP: 0.5, topK: 5 })).toEqual([
      'temperature',
      'topP',
      'topK',
    ]);
    expect(unsupported({ reasoningEffort: 'high', temperature: 1, topP: 0.97 })).toEqual([]);
    expect(unsupported({ reasoningEffort: 'none', temperature: 0.2 })).toEqual([]);
  });

  it('sends a forced tool choice without thinking, which the API refuses together', async () => {
    const { url, received } = await serve(ANTHROPIC_TEXT);
    const provider = new AnthropicProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 });
    const tool = { name: 'complete_task', description: 'Done.', parameters: { type: 'object' } };
    await collect(
      provider.turn(
        turnRequest({ reasoningEffort: 'medium', tools: [tool], toolChoice: { tool: 'complete_task' } }),
      ),
    );
    await collect(
      provider.turn(turnRequest({ reasoningEffort: 'medium', tools: [tool], toolChoice: 'auto' })),
    );
    expect(received[0]?.json.thinking).toBeUndefined();
    expect(received[0]?.json).toMatchObject({ max_tokens: 8192, tool_choice: { type: 'tool' } });
    expect(received[1]?.json).toMatchObject({
      max_tokens: 8192 + 4096,
      thinking: { type: 'enabled', budget_tokens: 4096 },
    });
  });
});
