import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { canonicalArgs } from '../../src/tools/params.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';
import type { Tool, ToolContext, ToolOutcome } from '../../src/tools/types.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

function spyTool(name: string, readOnly: boolean, outcome: ToolOutcome = { ok: true, text: 'done' }) {
  const execute = vi.fn((_args: Record<string, unknown>, _ctx: ToolContext) => outcome);
  const tool: Tool = {
    name,
    description: `${name} for tests`,
    parameters: {
      type: 'object',
      properties: { target: { type: 'string' }, count: { type: 'integer', minimum: 1 } },
      required: ['target'],
      additionalProperties: false,
    },
    readOnly,
    execute,
  };
  return { tool, execute };
}

const names = (toolbox: { specs: readonly { name: string }[] }) => toolbox.specs.map((spec) => spec.name);

describe('tool policy', () => {
  it('admits every registered tool when `tools` is omitted, and none for `[]`', async () => {
    const cwd = await tempDir();
    expect(names(toolboxFor(cwd))).toEqual([
      'read_file',
      'list_dir',
      'glob',
      'grep',
      'search_replace',
      'write_file',
      'run_terminal_cmd',
      'todo_write',
      'web_fetch',
      'web_search',
    ]);
    const none = toolboxFor(cwd, { tools: [] });
    expect(none.specs).toEqual([]);
    const result = await none.call('read_file', { path: 'x' });
    expect(result).toMatchObject({ ok: false, attempts: 0 });
    expect(result.text).toBe('Tool `read_file` is not available. You have no tools.');
  });

  it('admits the allowlist, reading Claude Code names as their built-in tools', async () => {
    const cwd = await tempDir();
    expect(names(toolboxFor(cwd, { tools: ['Read', 'Grep', 'todo_write'] }))).toEqual([
      'read_file',
      'grep',
      'todo_write',
    ]);
    expect(names(toolboxFor(cwd, { tools: ['*'] }))).toHaveLength(10);
    expect(names(toolboxFor(cwd, { tools: ['read', 'WEBSEARCH', 'Bash(git diff:*)'] }))).toEqual([
      'read_file',
      'run_terminal_cmd',
      'web_search',
    ]);
  });

  it('lets disallowedTools win over the allowlist', async () => {
    const toolbox = toolboxFor(await tempDir(), {
      tools: ['read_file', 'grep'],
      disallowedTools: ['Grep'],
    });
    expect(names(toolbox)).toEqual(['read_file']);
  });

  it('never executes a disallowed tool the model calls anyway, and lists what it may call', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(
      await tempDir(),
      { tools: ['read_file', 'deploy'], disallowedTools: ['deploy'] },
      [tool],
    );
    const result = await toolbox.call('deploy', { target: 'prod' });
    expect(execute).not.toHaveBeenCalled();
    expect(result).toEqual({
      ok: false,
      text: 'Tool `deploy` is not available. Available tools: read_file.',
      canonicalName: undefined,
      attempts: 0,
    });
  });

  it('never executes a disallowed tool called through its override name', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(
      await tempDir(),
      { disallowedTools: ['deploy'], toolNameOverrides: { deploy: 'Ship' } },
      [tool],
    );
    expect(names(toolbox)).not.toContain('Ship');
    for (const name of ['Ship', 'deploy']) {
      const result = await toolbox.call(name, { target: 'prod' });
      expect(result.ok).toBe(false);
      expect(result.text).toContain('is not available');
    }
    expect(execute).not.toHaveBeenCalled();
  });

  it('maps an override name back to its tool and refuses the canonical name', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(await tempDir(), { toolNameOverrides: { deploy: 'Ship' } }, [tool]);
    expect(names(toolbox)).toContain('Ship');
    expect(toolbox.modelName('deploy')).toBe('Ship');
    expect(toolbox.canonicalName('Ship')).toBe('deploy');

    const refused = await toolbox.call('deploy', { target: 'prod' });
    expect(refused.text).toContain(
      'Available tools: read_file, list_dir, glob, grep, search_replace, write_file, run_terminal_cmd, todo_write, web_fetch, web_search, Ship.',
    );
    expect(execute).not.toHaveBeenCalled();

    const ran = await toolbox.call('Ship', { target: 'prod' });
    expect(ran).toMatchObject({ ok: true, text: 'done', canonicalName: 'deploy', attempts: 1 });
    expect(execute).toHaveBeenCalledOnce();
  });

  it("answers a copy of the tool's outcome, every member of it, and never takes a `__proto__` member as the copy's prototype", async () => {
    const data = { rows: 2 };
    const outcome = { ok: true, text: 'done', data, retryable: false } as ToolOutcome;
    const { tool } = spyTool('deploy', false, outcome);
    const ran = await toolboxFor(await tempDir(), {}, [tool]).call('deploy', { target: 'prod' });
    expect(ran).toEqual({ ...outcome, canonicalName: 'deploy', attempts: 1 });
    expect(ran).not.toBe(outcome);
    expect(ran.data).toBe(data);
    expect(outcome).not.toHaveProperty('canonicalName');

    // A tool that returns parsed JSON can hand back an own `__proto__` member.
    const parsed = JSON.parse(
      '{"ok":true,"text":"done","__proto__":{"ok":false,"capture":{}}}',
    ) as ToolOutcome;
    const { tool: parsing } = spyTool('parse', false, parsed);
    const result = await toolboxFor(await tempDir(), {}, [parsing]).call('parse', { target: 'x' });
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(result.capture).toBeUndefined();
    expect(Object.hasOwn(result, '__proto__')).toBe(true);
    expect(result).toMatchObject({ ok: true, text: 'done', canonicalName: 'parse', attempts: 1 });
  });

  it('under plan admits only read-only tools; a plan agent calling a write tool changes nothing', async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, 'notes.txt'), 'original');
    const { tool, execute } = spyTool('deploy', false);
    const { tool: lookup } = spyTool('lookup', true);
    const toolbox = toolboxFor(cwd, { permissionMode: 'plan' }, [tool, lookup]);
    expect(names(toolbox)).toEqual([
      'read_file',
      'list_dir',
      'glob',
      'grep',
      'todo_write',
      'web_fetch',
      'web_search',
      'lookup',
    ]);

    expect((await toolbox.call('deploy', { target: 'prod' })).ok).toBe(false);
    expect(execute).not.toHaveBeenCalled();
    const edit = await toolbox.call('search_replace', {
      path: 'notes.txt',
      old_string: 'original',
      new_string: 'x',
    });
    expect(edit.ok).toBe(false);
    expect(await readFile(path.join(cwd, 'notes.txt'), 'utf8')).toBe('original');
    const shell = await toolbox.call('run_terminal_cmd', { command: 'echo hacked > notes.txt' });
    expect(shell.ok).toBe(false);
    expect(await readFile(path.join(cwd, 'notes.txt'), 'utf8')).toBe('original');
  });

  it('re-checks the policy at call time against the tool registered now', async () => {
    const cwd = await tempDir();
    const { tool } = spyTool('lookup', true);
    const registry = createToolRegistry([tool]);
    const toolbox = buildToolbox(makeDefinition({ permissionMode: 'plan' }), registry, { cwd, agentId: 'a' });
    expect(names(toolbox)).toContain('lookup');
    const { tool: writer, execute } = spyTool('lookup', false);
    registry.replace(writer);
    const result = await toolbox.call('lookup', { target: 'x' });
    expect(result.ok).toBe(false);
    expect(execute).not.toHaveBeenCalled();
  });

  it('answers an unknown tool with the admitted names and runs nothing', async () => {
    const toolbox = toolboxFor(await tempDir(), { tools: ['read_file', 'grep'] });
    expect((await toolbox.call('rm_rf', {})).text).toBe(
      'Tool `rm_rf` is not available. Available tools: read_file, grep.',
    );
  });

  it('refuses two admitted tools with the same model-facing name', async () => {
    const cwd = await tempDir();
    let error: unknown;
    try {
      toolboxFor(cwd, { toolNameOverrides: { grep: 'read_file' } });
    } catch (thrown) {
      error = thrown;
    }
    expect(hasErrorCode(error, 'tool_name_conflict')).toBe(true);
    // No conflict when the clashing tool is not admitted.
    expect(names(toolboxFor(cwd, { tools: ['grep'], toolNameOverrides: { grep: 'read_file' } }))).toEqual([
      'read_file',
    ]);
  });

  it('exposes every registered tool to templates, with an empty name when not admitted', async () => {
    const toolbox = toolboxFor(await tempDir(), {
      permissionMode: 'plan',
      toolNameOverrides: { read_file: 'Read' },
    });
    expect(toolbox.promptTools).toEqual({
      names: {
        read_file: 'Read',
        list_dir: 'list_dir',
        glob: 'glob',
        grep: 'grep',
        search_replace: '',
        write_file: '',
        run_terminal_cmd: '',
        todo_write: 'todo_write',
        web_fetch: 'web_fetch',
        web_search: 'web_search',
      },
      background: [],
    });
    expect(toolbox.admitted.has('search_replace')).toBe(false);
    expect(toolbox.admitted.get('read_file')?.name).toBe('read_file');
  });
});

describe('tool calls', () => {
  it('returns a failure naming the bad field instead of running the tool on invalid arguments', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(await tempDir(), {}, [tool]);
    const cases: [unknown, string][] = [
      [{ target: 3 }, '`/target` must be string'],
      [{}, 'missing required property `target`'],
      [{ target: 'x', force: true }, 'unexpected property `force`'],
      [{ target: 'x', count: 0 }, '`/count` must be >= 1'],
      ['not an object', 'expected a JSON object'],
      [[1, 2], 'expected a JSON object'],
    ];
    for (const [args, message] of cases) {
      const result = await toolbox.call('deploy', args);
      expect(result).toMatchObject({ ok: false, canonicalName: 'deploy', attempts: 0 });
      expect(result.text).toContain('Invalid arguments for `deploy`');
      expect(result.text).toContain(message);
    }
    expect(execute).not.toHaveBeenCalled();
  });

  it('turns an exception in execute into a failed outcome', async () => {
    const tool: Tool = {
      ...spyTool('deploy', false).tool,
      execute: () => {
        throw new Error('disk on fire');
      },
    };
    const result = await toolboxFor(await tempDir(), {}, [tool]).call('deploy', { target: 'x' });
    expect(result).toMatchObject({ ok: false, text: 'deploy failed: disk on fire', attempts: 1 });
  });

  it('turns an outcome that is not `{ ok, text }` into a failed outcome naming the tool', async () => {
    // A tool module is not type-checked: these once reached the loop as they were, and an answer
    // without text never settled its turn (the agent hung until its wall clock).
    const returns: unknown[] = [
      'just a string',
      5n,
      undefined,
      { ok: true, text: 10n },
      { ok: true, text: Symbol('s') },
      { ok: true, text: () => 'x' },
      { text: 'no ok' },
    ];
    const cwd = await tempDir();
    for (const value of returns) {
      const tool = { ...spyTool('deploy', false).tool, execute: () => value } as unknown as Tool;
      const result = await toolboxFor(cwd, {}, [tool]).call('deploy', { target: 'x' });
      expect(result).toMatchObject({ ok: false, attempts: 1 });
      expect(typeof result.text).toBe('string');
      expect(result.text).toMatch(/^deploy failed: it returned an invalid outcome: expected /);
    }
    const fine = { ...spyTool('deploy', false).tool, execute: async () => ({ ok: true, text: 'done' }) };
    expect(await toolboxFor(cwd, {}, [fine]).call('deploy', { target: 'x' })).toMatchObject({
      ok: true,
      text: 'done',
    });
  });

  it('gives the tool the signal, working directory, agent id and bash settings', async () => {
    const cwd = await tempDir();
    const { tool, execute } = spyTool('deploy', false);
    const bash = { timeoutSecs: 7, outputByteLimit: 99, cmdPrefix: 'set -e;' };
    const toolbox = toolboxFor(cwd, { bash }, [tool]);
    const controller = new AbortController();
    await toolbox.call('deploy', { target: 'x' }, { signal: controller.signal });
    // The tool's signal follows the caller's while the call runs, and also aborts at the tool's
    // time limit (test/tools/tool-timeout.test.ts).
    expect(execute).toHaveBeenCalledWith(
      { target: 'x' },
      {
        signal: expect.any(AbortSignal),
        cwd,
        agentId: 'agent-1',
        bash,
        fitsState: expect.any(Function),
        settings: {},
      },
    );
  });

  it('does not start a tool once the signal has aborted', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(await tempDir(), {}, [tool]);
    const result = await toolbox.call('deploy', { target: 'x' }, { signal: AbortSignal.abort() });
    expect(result).toMatchObject({ ok: false, text: 'deploy was cancelled', attempts: 0 });
    expect(execute).not.toHaveBeenCalled();
  });
});

describe('parameter name overrides', () => {
  const overrides = { paramNameOverrides: { deploy: { target: 'environment' } } };

  it('renames the parameter in the spec, in properties and in required', async () => {
    const { tool } = spyTool('deploy', false);
    const spec = toolboxFor(await tempDir(), overrides, [tool]).specs.find(
      (entry) => entry.name === 'deploy',
    );
    expect(spec?.parameters).toEqual({
      type: 'object',
      properties: { environment: { type: 'string' }, count: { type: 'integer', minimum: 1 } },
      required: ['environment'],
      additionalProperties: false,
    });
  });

  it('maps the model-facing name back before validation and execution', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(await tempDir(), overrides, [tool]);
    expect((await toolbox.call('deploy', { environment: 'prod', count: 2 })).ok).toBe(true);
    expect(execute.mock.calls[0]?.[0]).toEqual({ target: 'prod', count: 2 });
  });

  it('names the model-facing field in validation errors and refuses the canonical name', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const toolbox = toolboxFor(await tempDir(), overrides, [tool]);
    expect((await toolbox.call('deploy', { environment: 5 })).text).toContain(
      '`/environment` must be string',
    );
    expect((await toolbox.call('deploy', {})).text).toContain('missing required property `environment`');
    expect((await toolbox.call('deploy', { target: 'prod' })).text).toContain(
      'unexpected property `target` (this parameter is called `environment`)',
    );
    expect(execute).not.toHaveBeenCalled();
  });

  it('refuses an override of a parameter the tool does not have, or two parameters sharing a name', async () => {
    const { tool } = spyTool('deploy', false);
    const cwd = await tempDir();
    const attempt = (paramNameOverrides: Record<string, Record<string, string>>) => {
      try {
        toolboxFor(cwd, { paramNameOverrides }, [tool]);
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(hasErrorCode(attempt({ deploy: { region: 'zone' } }), 'unknown_param_override')).toBe(true);
    expect(hasErrorCode(attempt({ deploy: { target: 'count' } }), 'param_name_conflict')).toBe(true);
  });

  it('reads journalled arguments back to the canonical names the tool got (canonicalArgs)', async () => {
    const { tool, execute } = spyTool('deploy', false);
    const swapped = { deploy: { target: 'count', count: 'target' } };
    const toolbox = toolboxFor(await tempDir(), { paramNameOverrides: swapped }, [tool]);
    const modelArgs = { count: 'prod', target: 2 };
    expect((await toolbox.call('deploy', modelArgs)).ok).toBe(true);
    expect(canonicalArgs('deploy', modelArgs, swapped)).toEqual(execute.mock.calls[0]?.[0]);
    expect(canonicalArgs('deploy', { environment: 'prod' }, overrides.paramNameOverrides)).toEqual({
      target: 'prod',
    });
    // A tool without renames keeps its arguments as they are.
    const same = { environment: 'prod' };
    expect(canonicalArgs('other', same, overrides.paramNameOverrides)).toBe(same);
  });
});
