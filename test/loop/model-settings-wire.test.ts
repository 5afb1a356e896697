/**
 * Model settings end to end: an agent whose definition, model-settings block and spawn set them
 * sends them in the exact request a recorded-stream server receives (OpenAI and Anthropic), and
 * its journal records them and verifies.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryBlockStore } from '../../src/blocks/memory-store.ts';
import { parseDefinition } from '../../src/definition/load.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { AnthropicProvider } from '../../src/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/providers/openai.ts';
import type { Provider } from '../../src/providers/types.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { replay, startServer, type TestServer } from '../providers/helpers.ts';
import { eventsOf, tempDir } from './helpers.ts';

const STREAMS = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/corpus/provider-streams',
);

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const DEFINITION = parseDefinition(
  [
    '---',
    'name: writer',
    'description: Writes.',
    'tools: []',
    'modelSettings: { id: acme.careful, version: ^1, temperature: 0.25 }',
    '---',
    'Write briefly.',
    '',
  ].join('\n'),
  '/project/.troupe/agents/writer.md',
).definition;

const BLOCKS = memoryBlockStore([
  {
    kind: 'modelSettings',
    id: 'acme.careful',
    version: '1.0.0',
    settings: { temperature: 0.9, topP: 0.9, stop: ['###'] },
  },
]);

async function runAgainst(stream: string, provider: (url: string) => Provider, model: string) {
  server = await startServer((_req, res, index) =>
    replay(res, readFileSync(path.join(STREAMS, stream)), 'text/event-stream', index + 1),
  );
  if (!DEFINITION) throw new Error('definition did not parse');
  const journal = new MemoryJournal();
  const outcome = await runAgent({
    agentId: 'writer-1',
    definition: DEFINITION,
    task: 'Say something about the weather.',
    provider: provider(server.url),
    model,
    registry: new ToolRegistry([]),
    cwd: tempDir(),
    journal,
    systemPrompt: 'Write briefly.',
    blocks: BLOCKS,
    defaultModelSettings: { maxOutputTokens: 4000, topP: 0.5 },
    modelSettings: { maxOutputTokens: 256 },
  });
  return { outcome, events: journal.events, received: server.received };
}

const EXPECTED_SETTINGS = { temperature: 0.25, topP: 0.9, maxOutputTokens: 256, stop: ['###'] };

describe('model settings on the wire', () => {
  it('openai: the exact Chat Completions request carries them, and the journal records them', async () => {
    const { outcome, events, received } = await runAgainst(
      'openai-chat-stream-text.sse',
      (url) => new OpenAIProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 }),
      'gpt-4o',
    );
    expect(outcome.status).toBe('completed');
    expect(received).toHaveLength(1);
    expect(received[0]?.json).toEqual({
      model: 'gpt-4o',
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 256,
      temperature: 0.25,
      top_p: 0.9,
      stop: ['###'],
      messages: [
        { role: 'system', content: 'Write briefly.' },
        { role: 'user', content: expect.stringContaining('Say something about the weather.') },
      ],
    });
    expect(eventsOf(events, 'Started')[0]?.modelSettings).toEqual(EXPECTED_SETTINGS);
    // ...and every request's InferenceSubmitted carries the settings it was sent with.
    const submitted = eventsOf(events, 'InferenceSubmitted');
    expect(submitted.length).toBeGreaterThan(0);
    for (const event of submitted) expect(event.modelSettings).toEqual(EXPECTED_SETTINGS);
    expect(eventsOf(events, 'Started')[0]?.blocks?.[0]).toMatchObject({
      id: 'acme.careful',
      version: '1.0.0',
    });
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 1,
    });
  });

  it('anthropic: the exact Messages request carries them, and the journal records them', async () => {
    const { outcome, events, received } = await runAgainst(
      'anthropic-messages-stream-text.sse',
      (url) => new AnthropicProvider({ baseURL: url, apiKey: 'k', maxRetries: 0 }),
      'claude-sonnet-4-5',
    );
    expect(outcome.status).toBe('completed');
    expect(received).toHaveLength(1);
    expect(received[0]?.json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      system: 'Write briefly.',
      stream: true,
      temperature: 0.25,
      top_p: 0.9,
      stop_sequences: ['###'],
      messages: [{ role: 'user', content: expect.stringContaining('Say something about the weather.') }],
    });
    expect(eventsOf(events, 'Started')[0]?.modelSettings).toEqual(EXPECTED_SETTINGS);
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 1,
    });
  });
});
