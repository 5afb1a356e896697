/**
 * What a program sees of a model that repeats secrets: the events that report what the agent did
 * (`agent:text`, `agent:tool`) are masked where the agent runs, like its journal; its deliverable
 * (the outcome's `answer` and `result`) is what the model gave, for the program to use.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentText, AgentToolCall } from '../../src/supervisor/events.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { LEAKY_ANSWER, SECRETS } from '../fixtures/cli/leaky-model.ts';
import { tempDir } from './helpers.ts';

const SCRIPTED = fileURLToPath(new URL('../fixtures/mcp/scripted-provider.ts', import.meta.url));
const RESULT = { summary: LEAKY_ANSWER, password: SECRETS.metadataPassword };
const STEPS = [
  {
    text: LEAKY_ANSWER,
    toolCalls: [{ name: 'list_dir', arguments: { path: '.', apiKey: SECRETS.metadataKey } }],
  },
  { text: `Done: ${SECRETS.openai}`, toolCalls: [{ name: 'complete_task', arguments: { result: RESULT } }] },
];
const leaksIn = (value: unknown): string[] =>
  Object.entries(SECRETS)
    .filter(([, secret]) => JSON.stringify(value).includes(secret))
    .map(([name]) => name);

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('secrets a model repeats, as a program sees them', () => {
  it('are masked in agent:text and agent:tool, on the supervisor and the handle, and kept in the result', async () => {
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps: STEPS } } },
    });
    const texts: AgentText[] = [];
    const tools: AgentToolCall[] = [];
    supervisor.on('agent:text', (event) => texts.push(event));
    supervisor.on('agent:tool', (event) => tools.push(event));
    const handle = supervisor.spawn('worker', { task: 'Review the configuration.' });
    const handleTexts: string[] = [];
    handle.on('text', (event) => handleTexts.push(event.text));
    const outcome = await handle.result;

    expect(outcome.status).toBe('completed');
    expect(texts.map((event) => event.text)).toEqual(handleTexts);
    expect(texts.length).toBeGreaterThan(0);
    expect(texts[0]?.text).toContain('redis://:[REDACTED]@cache.internal');
    expect(tools.length).toBeGreaterThan(0);
    expect(leaksIn([texts, handleTexts, tools])).toEqual([]);
    // The deliverable is the model's own: the program asked for it and decides where it goes.
    if (outcome.status !== 'completed') return;
    expect(outcome.result).toEqual(RESULT);
  }, 60_000);
});
