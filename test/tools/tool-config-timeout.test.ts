/**
 * `toolConfig.<tool>.timeoutMs` in a definition file: read with file:line problems like the other
 * toolConfig fields, and applied when the tool is called, over the tool's own `timeoutMs`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDefinitionFile } from '../../src/definition/load.ts';
import { formatProblem } from '../../src/definition/problems.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';
import type { Tool, ToolOutcome } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';

const tempDir = useTempDirs();

const NO_ARGS = { type: 'object', properties: {}, additionalProperties: false } as const;

/** A tool that answers after `ms`, or never; its own time limit is `timeoutMs`. */
function slowTool(name: string, timeoutMs: number, ms?: number): Tool {
  return {
    name,
    description: 'slow',
    parameters: NO_ARGS,
    readOnly: true,
    timeoutMs,
    execute: () =>
      new Promise<ToolOutcome>((resolve) => {
        if (ms !== undefined) setTimeout(() => resolve({ ok: true, text: 'done' }), ms);
      }),
  };
}

async function definitionFile(
  dir: string,
  toolConfig: string,
): Promise<{ file: string; load: ReturnType<typeof loadDefinitionFile> }> {
  const file = join(dir, 'timed.md');
  writeFileSync(
    file,
    `---\nname: timed\ndescription: Calls slow tools.\ntoolConfig:\n${toolConfig}\n---\nCall them.\n`,
  );
  return { file, load: loadDefinitionFile(file) };
}

function defined(result: Awaited<ReturnType<typeof loadDefinitionFile>>): AgentDefinition {
  if (result.definition === undefined) throw new Error(result.errors.map((p) => formatProblem(p)).join('\n'));
  return result.definition;
}

describe('toolConfig.<tool>.timeoutMs', () => {
  it('fails a call at the limit the definition sets, under the tool’s own', async () => {
    const dir = await tempDir();
    const { load } = await definitionFile(dir, '  hang: { timeoutMs: 30 }');
    const definition = defined(await load);
    expect(definition.toolConfig).toEqual({ hang: { timeoutMs: 30 } });
    const toolbox = buildToolbox(definition, createToolRegistry([slowTool('hang', 600_000)]), {
      cwd: dir,
      agentId: 'timed-1',
    });
    const result = await toolbox.call('hang', {});
    expect(result).toMatchObject({ ok: false, canonicalName: 'hang', attempts: 1 });
    expect(result.text).toBe(
      'hang did not finish within 30 ms (its time limit) and was abandoned. Do not call it again with the same arguments.',
    );
  });

  it('0 lifts the tool’s own limit, and a retry policy keeps its own timeoutMs beside it', async () => {
    const dir = await tempDir();
    const { load } = await definitionFile(
      dir,
      ['  slow: { timeoutMs: 0 }', '  grep: { retry: { maxRetries: 1 }, timeoutMs: 5000 }'].join('\n'),
    );
    const definition = defined(await load);
    expect(definition.toolConfig.grep).toMatchObject({ retry: { maxRetries: 1 }, timeoutMs: 5000 });
    // Its own limit (5 ms) is far under the time it takes (50 ms): only the definition's 0 lets it answer.
    const toolbox = buildToolbox(definition, createToolRegistry([slowTool('slow', 5, 50)]), {
      cwd: dir,
      agentId: 'timed-1',
    });
    expect(await toolbox.call('slow', {})).toMatchObject({ ok: true, text: 'done' });
  });

  it('reports a bad value with its file and line, like the other toolConfig fields', async () => {
    const dir = await tempDir();
    const { file, load } = await definitionFile(
      dir,
      [
        '  grep: { timeoutMs: -1 }',
        '  glob: { timeoutMs: 1.5 }',
        '  read_file: { timeoutMs: "10s" }',
        '  wait_for_instruction: { timeoutMs: 100 }',
      ].join('\n'),
    );
    const result = await load;
    expect(result.definition).toBeUndefined();
    expect(result.errors).toMatchObject([
      { code: 'invalid_field', path: '/toolConfig/grep/timeoutMs', line: 5, file },
      { code: 'invalid_field', path: '/toolConfig/glob/timeoutMs', line: 6, file },
      { code: 'invalid_field', path: '/toolConfig/read_file/timeoutMs', line: 7, file },
      { code: 'invalid_field', path: '/toolConfig/wait_for_instruction/timeoutMs', line: 8, file },
    ]);
    expect(result.errors[0]?.message).toContain('an integer from 0 (no limit) to 2147483647 (milliseconds)');
    expect(result.errors[3]?.message).toContain('bounded by its `retry`');
  });
});
