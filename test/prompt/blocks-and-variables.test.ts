// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
/** Template variables every prompt can test, settings values, and instructions from a prompt block. */
import { describe, expect, it } from 'vitest';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { type AssembleOptions, assembleSystemPrompt, settingsVariable } from '../../src/prompt/assemble.ts';
import { BASE_TEMPLATE_TOOLS, TEMPLATE_TOOL_NAMES } from '../../src/prompt/base-template.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';
import { makeDefinition } from './make-definition.ts';
import { useTempDirs } from './temp-dir.ts';

const tempDir = useTempDirs();
const environment = { osName: 'TestOS 1.0', shellPath: '/opt/bin/bash' };

async function assemble(def: AgentDefinition, extra: Partial<AssembleOptions> = {}) {
  const cwd = await tempDir();
  const toolbox = buildToolbox(def, createToolRegistry(), { cwd, agentId: 'agent-1' });
  return assembleSystemPrompt(def, {
    cwd,
    tools: toolbox.promptTools,
    environment,
    now: new Date(2024, 0, 31),
    skills: { homeDir: cwd },
    ...extra,
  });
}

const full = (body: string) => makeDefinition({ promptMode: 'full', body, agentsMd: false });

describe('template tool names', () => {
  it('defines every listed tool, so a guard on a tool troupe lacks drops its block', async () => {
    const body = [
      'Start.',
      '${%- if tools.web_search %} search ${%- endif %}',
      '${%- if tools.skill %} skill ${%- endif %}',
      '${%- if tools.get_task_output %} output ${%- endif %}',
      '${%- if tools.kill_task %} kill ${%- endif %}',
      '${%- if tools.spawn_agent %} spawn ${%- endif %}',
      'End.',
    ].join('\n');
    const prompt = await assemble(full(body), {});
    // web_search is a built-in (admitted by default); the others are not tools of this agent.
    expect(prompt).toBe('Start. search\nEnd.');
  });

  it('lists every tool the base template mentions, and the names other runtimes use', () => {
    expect(TEMPLATE_TOOL_NAMES).toEqual(expect.arrayContaining([...BASE_TEMPLATE_TOOLS]));
    expect(TEMPLATE_TOOL_NAMES).toEqual(
      expect.arrayContaining([
        'web_search',
        'skill',
        'get_task_output',
        'kill_task',
        'spawn_agent',
        'await_agents',
      ]),
    );
  });

  it('still refuses a tool name nobody defines', async () => {
    await expect(assemble(full('${{ tools.bash }}'))).rejects.toMatchObject({ code: 'template_error' });
  });
});

describe('settings in templates', () => {
  it('reads settings.<block id>.<key>, dots of the id included', async () => {
    const prompt = await assemble(
      full('Urgency ${{ settings.acme.weights.urgency }}; limit ${{ settings.team-a.limits.max }}.'),
      { settings: { 'acme.weights': { urgency: 0.7 }, 'team-a.limits': { max: 3 } } },
    );
    expect(prompt).toBe('Urgency 0.7; limit 3.');
  });

  it('fails on a settings key that does not exist, as on any unknown variable', async () => {
    await expect(
      assemble(full('${{ settings.acme.weights.nope }}'), { settings: { 'acme.weights': { urgency: 1 } } }),
    ).rejects.toMatchObject({ code: 'template_error' });
  });

  it('refuses two ids where one continues the other', () => {
    expect(() => settingsVariable({ 'acme.a': { x: 1 }, 'acme.a.b': { y: 2 } })).toThrow(
      expect.objectContaining({ code: 'settings_conflict' }),
    );
    expect(() => settingsVariable({ 'acme.a.b': { y: 2 }, 'acme.a': { x: 1 } })).toThrow(
      expect.objectContaining({ code: 'settings_conflict' }),
    );
    expect(settingsVariable({ 'acme.a': { x: 1 }, 'acme.b': { y: 2 } })).toEqual({
      acme: { a: { x: 1 }, b: { y: 2 } },
    });
  });
});

describe('instructions from a prompt block', () => {
  const instructions = {
    text: 'Triage ${{ queue }} tickets${%- if tools.run_terminal_cmd %} (you may run commands)${%- endif %}. Weight ${{ settings.acme.w.k }}.',
    file: '/blocks/acme.intake/1.0.0.md',
    firstLine: 4,
    parameters: { queue: 'billing' },
  };

  it('renders the block in place of the body after the base template (extend)', async () => {
    const def = makeDefinition({ body: '', agentsMd: false });
    const prompt = await assemble(def, { instructions, settings: { 'acme.w': { k: 2 } } });
    expect(prompt).toMatch(/^You are an AI agent run by troupe\./);
    expect(prompt).toContain('</user_info>\n\nTriage billing tickets (you may run commands). Weight 2.');
  });

  it('renders the block alone in full mode', async () => {
    const def = makeDefinition({ body: '', promptMode: 'full', agentsMd: false, tools: [] });
    const prompt = await assemble(def, { instructions, settings: { 'acme.w': { k: 2 } } });
    expect(prompt.split('\n\n')[0]).toBe('Triage billing tickets. Weight 2.');
  });

  it('locates a template error in the block file', async () => {
    const def = makeDefinition({ body: '' });
    await expect(
      assemble(def, { instructions: { ...instructions, text: 'line one\n${{ nope }}' } }),
    ).rejects.toMatchObject({
      code: 'template_error',
      fields: { file: '/blocks/acme.intake/1.0.0.md', line: 5 },
    });
  });

  it('refuses a block parameter named like a troupe variable', async () => {
    await expect(
      assemble(makeDefinition({ body: '' }), {
        instructions: { ...instructions, parameters: { settings: 1 } },
      }),
    ).rejects.toMatchObject({ code: 'reserved_parameter' });
  });
});
