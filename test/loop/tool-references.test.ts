import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { EventOf } from '../../src/journal/events.ts';
import { runScripted } from './helpers.ts';

function fromFile(frontmatter: string) {
  const loaded = parseDefinition(`---\nname: a\ndescription: d\n${frontmatter}\n---\nbody\n`, '/agents/a.md');
  if (!loaded.definition) throw new Error(JSON.stringify(loaded.errors));
  return loaded.definition;
}

describe('tool references at spawn', () => {
  it('fails the agent before any round when an override names no tool, saying where', async () => {
    const { outcome, events, provider } = await runScripted([], {
      definition: fromFile('toolConfig:\n  reed_file:\n    retry: { maxRetries: 2 }'),
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'invalid_request' });
    expect(outcome.status === 'failed' && outcome.error.code).toBe('unknown_tool_override');
    expect(outcome.status === 'failed' && outcome.error.message).toBe(
      '/agents/a.md:5:3: Expected `toolConfig` to name registered tools, found `reed_file` (did you mean `read_file`?)',
    );
    expect(provider.requests).toHaveLength(0);
    expect(events.map((event) => event.type)).toEqual(['Failed']);
  });

  it('records unknown tool names in the Started event with their position, and runs', async () => {
    const { outcome, events } = await runScripted([{ text: 'done' }], {
      definition: fromFile('tools: [Read, Reed, NotebookEdit]'),
    });
    expect(outcome.status).toBe('completed');
    const started = events[0] as EventOf<'Started'>;
    expect(started.toolSpecs.map((spec) => spec.name)).toEqual(['read_file']);
    expect(started.warnings?.map(({ code, line, column, path }) => [code, line, column, path])).toEqual([
      ['unknown_tool', 4, 15, '/tools/1'],
      ['unknown_tool', 4, 21, '/tools/2'],
    ]);
  });

  it('says first in the Started event that an agent whose tools entries name no tool runs with none', async () => {
    const { outcome, events } = await runScripted([{ text: 'done' }], {
      definition: fromFile('tools: codebase, githubRepo'),
    });
    expect(outcome.status).toBe('completed');
    const started = events[0] as EventOf<'Started'>;
    expect(started.toolSpecs.map((spec) => spec.name)).toEqual([]);
    expect(started.warnings?.map(({ code, path }) => [code, path])).toEqual([
      ['no_tools', '/tools'],
      ['unknown_tool', '/tools/0'],
      ['unknown_tool', '/tools/1'],
    ]);
  });

  it('says an orchestration tool needs a Supervisor, not that it does not exist', async () => {
    const { outcome, events } = await runScripted([{ text: 'done' }], {
      definition: fromFile('tools: [Read, spawn_agent, Task]'),
    });
    expect(outcome.status).toBe('completed');
    const warnings = (events[0] as EventOf<'Started'>).warnings ?? [];
    expect(warnings.map(({ path }) => path)).toEqual(['/tools/1', '/tools/2']);
    for (const { message } of warnings) {
      // Before: "`spawn_agent` in `tools` matches no registered tool; it is ignored".
      expect(message).toContain('is an orchestration tool, which needs a Supervisor');
      expect(message).toContain('`troupe fanout`');
    }
  });
});

describe('the model at spawn', () => {
  it('records a model that cannot be an id, sent as written, in the Started event at its position; not once a modelMap or --model replaced it', async () => {
    const definition = fromFile('model: sonet');
    const { events } = await runScripted([{ text: 'done' }], { definition, run: { model: 'sonet' } });
    const started = events[0] as EventOf<'Started'>;
    expect(started.warnings).toMatchObject([
      { code: 'unknown_model', file: '/agents/a.md', line: 4, column: 8, path: '/model' },
    ]);
    expect(started.warnings?.[0]?.message).toContain('found `sonet`');

    const mapped = await runScripted([{ text: 'done' }], { definition, run: { model: 'claude-sonnet-4-6' } });
    expect((mapped.events[0] as EventOf<'Started'>).warnings).toBeUndefined();
  });
});

describe('the model at spawn, whatever gave it', () => {
  it('warns once about a model sent that cannot be an id, naming what gave it', async () => {
    const started = async (frontmatter: string, run: { model: string; modelSource?: string }) => {
      const { events } = await runScripted([{ text: 'done' }], { definition: fromFile(frontmatter), run });
      return (events[0] as EventOf<'Started'>).warnings;
    };
    // Before: only a definition's own model, sent as written, was warned about.
    expect(await started('model: default', { model: 'sonet' })).toEqual([
      {
        code: 'unknown_model',
        message: expect.stringMatching(/^Expected the model resolved for this run to be .*found `sonet`/),
      },
    ]);
    expect(await started('model: sonet', { model: 'sonet', modelSource: '`--model`' })).toEqual([
      { code: 'unknown_model', message: expect.stringMatching(/^Expected `--model` to be .*found `sonet`/) },
    ]);
    // The simulated provider does not send the definition's model; a real one would refuse it.
    expect(await started('model: sonet', { model: 'simulated' })).toEqual([
      {
        code: 'unknown_model',
        message: expect.stringMatching(
          /found `sonet`.*this run does not send it: the simulated provider runs as `simulated`$/,
        ),
        file: '/agents/a.md',
        line: 4,
        column: 8,
        path: '/model',
      },
    ]);
    expect(await started('model: sonnet', { model: 'simulated' })).toBeUndefined();
    // A bare word far from every alias is a local server's model more often than a typo: no
    // warning on each spawn (agents validate still names it).
    expect(await started('model: default', { model: 'mistral' })).toBeUndefined();
    expect(await started('model: fable', { model: 'simulated' })).toBeUndefined();
  });
});
