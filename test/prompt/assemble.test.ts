// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
import { truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { hasErrorCode, type TroupeError } from '../../src/errors.ts';
import { type AssembleOptions, assembleSystemPrompt } from '../../src/prompt/assemble.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { declareCompleteTask } from '../../src/tools/builtin/orchestration.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';
import type { Tool } from '../../src/tools/types.ts';
import { makeDefinition } from './make-definition.ts';
import { useTempDirs, writeTree } from './temp-dir.ts';

const tempDir = useTempDirs();
const environment = { osName: 'TestOS 1.0', shellPath: '/opt/bin/bash' };
// Local time: the date must not shift with the time zone of the machine running the tests.
const now = new Date(2024, 0, 31, 23, 30);

const backgroundTool: Tool = {
  name: 'spawn_worker',
  description: 'Starts a subagent in the background.',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  background: true,
  execute: () => ({ ok: true, text: 'started' }),
};

async function assemble(def: AgentDefinition, extra: Partial<AssembleOptions> = {}, tools: Tool[] = []) {
  const cwd = extra.cwd ?? (await tempDir());
  const toolbox = buildToolbox(def, createToolRegistry([declareCompleteTask(), ...tools]), {
    cwd,
    agentId: 'agent-1',
  });
  const prompt = await assembleSystemPrompt(def, {
    cwd,
    tools: toolbox.promptTools,
    environment,
    now,
    skills: { homeDir: cwd },
    ...extra,
  });
  return { prompt, toolbox, cwd };
}

async function rejection(promise: Promise<unknown>): Promise<TroupeError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeDefined();
  return error as TroupeError;
}

const TEMPLATED_BODY = [
  'You review code. Literal {{ handlebars }} stays.',
  '${%- if tools.run_terminal_cmd %}',
  'Run the tests with ${{ tools.run_terminal_cmd }}.',
  '${%- endif %}',
  'You are in ${{ working_directory }} on ${{ os_name }}.',
].join('\n');

describe('assembleSystemPrompt', () => {
  it('extend mode puts the base template first and the body after it, as written', async () => {
    const def = makeDefinition({ body: TEMPLATED_BODY });
    const { prompt, cwd } = await assemble(def);
    expect(prompt.startsWith('You are an AI agent run by troupe.')).toBe(true);
    expect(prompt).toContain('# Tool calls');
    expect(prompt).toContain(
      `<user_info>\nOS: TestOS 1.0\nShell: /opt/bin/bash\nWorking directory: ${cwd}\nDate: 2024-01-31\n</user_info>`,
    );
    expect(prompt.endsWith(TEMPLATED_BODY)).toBe(true);
    expect(prompt.indexOf('</user_info>')).toBeLessThan(prompt.indexOf(TEMPLATED_BODY));
  });

  it('full mode renders the body as the template, without the base template', async () => {
    const def = makeDefinition({ body: TEMPLATED_BODY, promptMode: 'full' });
    const { prompt, cwd } = await assemble(def);
    expect(prompt).toBe(
      [
        'You review code. Literal {{ handlebars }} stays.',
        'Run the tests with run_terminal_cmd.',
        `You are in ${cwd} on TestOS 1.0.`,
      ].join('\n'),
    );
    expect(prompt).not.toContain('run by troupe');
  });

  it('drops a conditional block when its tool is disallowed, or not read-only under plan', async () => {
    for (const def of [
      makeDefinition({ body: TEMPLATED_BODY, promptMode: 'full', disallowedTools: ['run_terminal_cmd'] }),
      makeDefinition({ body: TEMPLATED_BODY, promptMode: 'full', permissionMode: 'plan' }),
      makeDefinition({ body: TEMPLATED_BODY, promptMode: 'full', tools: ['read_file'] }),
    ]) {
      const { prompt, cwd } = await assemble(def);
      expect(prompt).toBe(
        `You review code. Literal {{ handlebars }} stays.\nYou are in ${cwd} on TestOS 1.0.`,
      );
    }
  });

  it('mentions in the base template only the tools that are admitted', async () => {
    const all = (await assemble(makeDefinition())).prompt;
    expect(all).toContain('`run_terminal_cmd` runs commands');
    expect(all).toContain('call `complete_task` with the result');
    const plan = (
      await assemble(makeDefinition({ permissionMode: 'plan', disallowedTools: ['complete_task'] }))
    ).prompt;
    expect(plan).not.toContain('run_terminal_cmd');
    expect(plan).not.toContain('search_replace');
    expect(plan).not.toContain('complete_task');
    expect(plan).toContain('todo_write');
  });

  it('shows tool name overrides in the prompt and in the tool specs alike', async () => {
    const overrides = { run_terminal_cmd: 'Bash', complete_task: 'submit' };
    const extend = await assemble(makeDefinition({ toolNameOverrides: overrides }));
    expect(extend.prompt).toContain('`Bash` runs commands');
    expect(extend.prompt).toContain('call `submit` with the result');
    expect(extend.prompt).not.toContain('run_terminal_cmd');
    expect(extend.prompt).not.toContain('complete_task');
    const names = extend.toolbox.specs.map((spec) => spec.name);
    expect(names).toContain('Bash');
    expect(names).toContain('submit');
    expect(names).not.toContain('run_terminal_cmd');

    const full = await assemble(
      makeDefinition({ toolNameOverrides: overrides, promptMode: 'full', body: TEMPLATED_BODY }),
    );
    expect(full.prompt).toContain('Run the tests with Bash.');
  });

  it('formats for concise output differently from the default', async () => {
    const concise = (await assemble(makeDefinition({ outputFormat: 'concise' }))).prompt;
    const normal = (await assemble(makeDefinition())).prompt;
    expect(concise).toContain('Be concise');
    expect(normal).not.toContain('Be concise');
    expect(normal).toContain('Use Markdown where it helps');
  });

  it('adds the background-task note only when a background tool is admitted', async () => {
    const withTool = (await assemble(makeDefinition(), {}, [backgroundTool])).prompt;
    expect(withTool).toContain('# Background tasks');
    expect(withTool).toContain('continues in the background: `spawn_worker`');
    const denied = (
      await assemble(makeDefinition({ disallowedTools: ['spawn_worker'] }), {}, [backgroundTool])
    ).prompt;
    expect(denied).not.toContain('Background tasks');
    expect((await assemble(makeDefinition())).prompt).not.toContain('Background tasks');
  });

  it('passes caller parameters to full templates and refuses ones named like troupe variables', async () => {
    const def = makeDefinition({ promptMode: 'full', body: 'Focus on ${{ focus }}.' });
    expect((await assemble(def, { parameters: { focus: 'security' } })).prompt).toBe('Focus on security.');
    const error = await rejection(assemble(def, { parameters: { os_name: 'x' } }));
    expect(hasErrorCode(error, 'reserved_parameter')).toBe(true);
    expect(error.fields).toEqual({ parameter: 'os_name' });
  });

  it('reports a template error in a full body at its line in the definition file', async () => {
    const def = makeDefinition({
      promptMode: 'full',
      path: '/defs/reviewer.md',
      bodyLine: 6,
      body: 'First line.\nSecond uses ${{ tools.no_such_tool }}.',
    });
    const error = await rejection(assemble(def));
    expect(hasErrorCode(error, 'template_error')).toBe(true);
    expect(error.fields).toEqual({ file: '/defs/reviewer.md', line: 7, column: 17 });
  });

  it('never treats an extend body as a template', async () => {
    const body = 'Broken on purpose: ${{ nope }} ${% if %}';
    expect((await assemble(makeDefinition({ body }))).prompt.endsWith(body)).toBe(true);
  });

  it('lists only the skills whose file read_file can reach; the others can still be pre-loaded', async () => {
    const repo = await tempDir();
    const home = await tempDir();
    await writeTree(repo, {
      '.git/HEAD': 'x',
      '.troupe/skills/far/SKILL.md': '---\nname: far\ndescription: At the git root\n---\nFar away.\n',
      'sub/.troupe/skills/near/SKILL.md': '---\nname: near\ndescription: In the cwd\n---\nClose.\n',
    });
    await writeTree(home, {
      '.claude/skills/mine/SKILL.md': '---\nname: mine\ndescription: In the home\n---\nHome.\n',
    });
    const cwd = path.join(repo, 'sub');
    const listed = (await assemble(makeDefinition({ body: 'BODY' }), { cwd, skills: { homeDir: home } }))
      .prompt;
    expect(listed).toContain('- near: In the cwd');
    expect(listed).not.toContain('- far:');
    expect(listed).not.toContain('- mine:');
    const preloaded = (
      await assemble(makeDefinition({ body: 'BODY', skills: ['far', 'mine'] }), {
        cwd,
        skills: { homeDir: home },
      })
    ).prompt;
    expect(preloaded).toContain('<skill name="far">\nFar away.');
    expect(preloaded).toContain('<skill name="mine">\nHome.');
  });

  it('appends AGENTS.md and skills after the body, and leaves AGENTS.md out when agentsMd is false', async () => {
    const cwd = await tempDir();
    await writeTree(cwd, {
      '.git/HEAD': 'ref: refs/heads/main\n',
      'AGENTS.md': 'Run npm test before committing.\n',
      '.troupe/skills/release/SKILL.md': '---\nname: release\ndescription: Cut a release\n---\nTag it.\n',
    });
    const def = makeDefinition({ body: 'BODY' });
    const { prompt } = await assemble(def, { cwd });
    const order = [
      'BODY',
      '# Project instructions (AGENTS.md)',
      'Run npm test',
      '# Skills',
      '- release: Cut a release',
    ];
    const positions = order.map((text) => prompt.indexOf(text));
    expect(positions.every((at) => at >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);

    const without = (await assemble(makeDefinition({ body: 'BODY', agentsMd: false }), { cwd })).prompt;
    expect(without).not.toContain('AGENTS.md');
    expect(without).toContain('- release: Cut a release');
  });

  it('reports an unknown skill with its name, the available ones and its line in the file', async () => {
    const cwd = await tempDir();
    await writeTree(cwd, {
      '.troupe/skills/release/SKILL.md': '---\nname: release\ndescription: Cut a release\n---\nTag it.\n',
      '.troupe/skills/triage/SKILL.md': '---\nname: triage\ndescription: Sort issues\n---\nLabel.\n',
    });
    const file = path.join(cwd, 'agent.md');
    await writeFile(file, '---\nname: tester\ndescription: d\nskills:\n  - release\n  - deploy\n---\nBody\n');
    const def = makeDefinition({ path: file, bodyLine: 8, skills: ['release', 'deploy'] });
    const error = await rejection(assemble(def, { cwd }));
    expect(hasErrorCode(error, 'unknown_skill')).toBe(true);
    expect(error.fields).toMatchObject({ file, line: 6, skill: 'deploy', available: ['release', 'triage'] });
    expect(error.message).toContain('unknown skill `deploy`');
    expect(error.message).toContain('release, triage');
  });

  it('finds an unknown skill line in a definition file that grew huge, reading only its start', async () => {
    const cwd = await tempDir();
    const file = path.join(cwd, 'agent.md');
    await writeFile(file, '---\nname: tester\nskills:\n  - deploy\n---\nBody\n');
    // 3 GiB, sparse: read whole it was refused, and the error lost its line.
    await truncate(file, 3 * 2 ** 30);
    const def = makeDefinition({ path: file, bodyLine: 6, skills: ['deploy'] });
    const error = await rejection(assemble(def, { cwd }));
    expect(hasErrorCode(error, 'unknown_skill')).toBe(true);
    expect(error.fields).toMatchObject({ file, line: 4, skill: 'deploy' });
  });
});
