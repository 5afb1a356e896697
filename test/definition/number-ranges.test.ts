import { describe, expect, it } from 'vitest';
import {
  MAX_BASH_OUTPUT_BYTE_LIMIT,
  MAX_BASH_TIMEOUT_SECS,
  MAX_DEFINITION_RETRIES,
  MAX_TIMER_MS,
  MAX_TOOL_RESULT_CHARS,
} from '../../src/constants.ts';
import { parseDefinition } from '../../src/definition/load.ts';
import { checkDefinitionNumbers } from '../../src/definition/number-ranges.ts';
import { hasErrorCode } from '../../src/errors.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';
import { eventsOf, runScripted } from '../loop/helpers.ts';
import { makeDefinition } from '../prompt/make-definition.ts';

const FILE = '/project/.troupe/agents/a.md';

function parse(frontmatter: string) {
  return parseDefinition(`---\nname: a\ndescription: d\n${frontmatter}\n---\nThe body.\n`, FILE);
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('the upper bounds of a definition file’s numbers', () => {
  it('refuses a bash.outputByteLimit past its maximum at its line and column, naming the bound', () => {
    const result = parse('bash:\n  outputByteLimit: 1000000000000');
    expect(result.definition).toBeUndefined();
    expect(result.errors).toEqual([
      {
        severity: 'error',
        code: 'invalid_field',
        message: `Expected \`bash.outputByteLimit\` to be a positive integer up to ${MAX_BASH_OUTPUT_BYTE_LIMIT}, got \`1000000000000\` (number)`,
        file: FILE,
        line: 5,
        column: 20,
        path: '/bash/outputByteLimit',
      },
    ]);
  });

  it('keeps the largest outputByteLimit within a tool result, with room for its notes', () => {
    expect(MAX_BASH_OUTPUT_BYTE_LIMIT * 2).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
  });

  it('refuses every other number past its maximum: bash.timeoutSecs, retry counts and delays', () => {
    const result = parse(
      [
        'bash: { timeoutSecs: 3000000 }',
        'completionRequirement:',
        '  tool: complete_task',
        '  recovery: { maxRetries: 1000001, baseDelayMs: 3000000000, maxDelayMs: 3000000000 }',
        'toolConfig:',
        '  grep: { retry: { maxRetries: 1001, maxDelayMs: 3000000000 } }',
      ].join('\n'),
    );
    expect(result.errors.map(({ path, line, message }) => ({ path, line, message }))).toEqual([
      {
        path: '/bash/timeoutSecs',
        line: 4,
        message: `Expected \`bash.timeoutSecs\` to be a positive number up to ${MAX_BASH_TIMEOUT_SECS}, got \`3000000\` (number)`,
      },
      {
        path: '/completionRequirement/recovery/maxRetries',
        line: 7,
        message: `Expected \`completionRequirement.recovery.maxRetries\` to be a non-negative integer up to ${MAX_DEFINITION_RETRIES}, got \`1000001\` (number)`,
      },
      {
        path: '/completionRequirement/recovery/baseDelayMs',
        line: 7,
        message: `Expected \`completionRequirement.recovery.baseDelayMs\` to be a non-negative number up to ${MAX_TIMER_MS}, got \`3000000000\` (number)`,
      },
      {
        path: '/completionRequirement/recovery/maxDelayMs',
        line: 7,
        message: `Expected \`completionRequirement.recovery.maxDelayMs\` to be a non-negative number up to ${MAX_TIMER_MS}, got \`3000000000\` (number)`,
      },
      {
        path: '/toolConfig/grep/retry/maxRetries',
        line: 9,
        message: `Expected \`toolConfig.grep.retry.maxRetries\` to be a non-negative integer up to ${MAX_DEFINITION_RETRIES}, got \`1001\` (number)`,
      },
      {
        path: '/toolConfig/grep/retry/maxDelayMs',
        line: 9,
        message: `Expected \`toolConfig.grep.retry.maxDelayMs\` to be a non-negative number up to ${MAX_TIMER_MS}, got \`3000000000\` (number)`,
      },
    ]);
  });

  it('takes every number at its maximum', () => {
    const result = parse(
      [
        `bash: { timeoutSecs: ${MAX_BASH_TIMEOUT_SECS}, outputByteLimit: ${MAX_BASH_OUTPUT_BYTE_LIMIT} }`,
        'completionRequirement:',
        '  tool: complete_task',
        `  recovery: { maxRetries: ${MAX_DEFINITION_RETRIES}, baseDelayMs: ${MAX_TIMER_MS}, maxDelayMs: ${MAX_TIMER_MS} }`,
        `toolConfig: { grep: { timeoutMs: ${MAX_TIMER_MS}, retry: { maxRetries: ${MAX_DEFINITION_RETRIES} } } }`,
      ].join('\n'),
    );
    expect(result.errors).toEqual([]);
    expect(result.definition?.bash).toEqual({
      timeoutSecs: MAX_BASH_TIMEOUT_SECS,
      outputByteLimit: MAX_BASH_OUTPUT_BYTE_LIMIT,
    });
  });
});

describe('the numbers of a definition built in code', () => {
  it('fail its run with invalid_definition, journalled, before any model request', async () => {
    const { outcome, events } = await runScripted([], {
      definition: { name: 'big', bash: { timeoutSecs: 30, outputByteLimit: 1_000_000_000_000 } },
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'invalid_request', steps: 0 });
    if (outcome.status !== 'failed') throw new Error('expected a failure');
    expect(outcome.error).toMatchObject({
      code: 'invalid_definition',
      message: `Expected \`bash.outputByteLimit\` of agent \`big\` to be a positive integer up to ${MAX_BASH_OUTPUT_BYTE_LIMIT}, got \`1000000000000\` (number)`,
      fields: {
        name: 'big',
        field: 'bash.outputByteLimit',
        value: 1_000_000_000_000,
        max: MAX_BASH_OUTPUT_BYTE_LIMIT,
      },
    });
    expect(eventsOf(events, 'Failed')).toHaveLength(1);
  });

  it('refuse a maxSteps that is not a positive integer, which no step count would reach', async () => {
    const { outcome } = await runScripted([], { definition: { maxSteps: Number.NaN } });
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'invalid_definition', fields: { field: 'maxSteps' } },
    });
  });

  it('are checked where a toolbox is built, and in retry policies and tool time limits', () => {
    const registry = createToolRegistry([]);
    const build = (fields: Parameters<typeof makeDefinition>[0]) => () =>
      buildToolbox(makeDefinition(fields), registry, { cwd: '/tmp', agentId: 'a' });
    const tooLong = thrown(build({ bash: { timeoutSecs: MAX_BASH_TIMEOUT_SECS + 1, outputByteLimit: 1 } }));
    expect(hasErrorCode(tooLong, 'invalid_definition')).toBe(true);
    expect(tooLong).toMatchObject({ fields: { field: 'bash.timeoutSecs', max: MAX_BASH_TIMEOUT_SECS } });
    const retries = thrown(
      build({ toolConfig: { grep: { retry: { maxRetries: 1e15, baseDelayMs: 0, maxDelayMs: 0 } } } }),
    );
    expect(retries).toMatchObject({
      code: 'invalid_definition',
      fields: { field: 'toolConfig.grep.retry.maxRetries', max: MAX_DEFINITION_RETRIES },
    });
    const timeout = thrown(build({ toolConfig: { 'my-tool': { timeoutMs: MAX_TIMER_MS + 1 } } }));
    expect(timeout).toMatchObject({
      code: 'invalid_definition',
      fields: { field: 'toolConfig.my-tool.timeoutMs' },
    });
    const recovery = thrown(() =>
      checkDefinitionNumbers(
        makeDefinition({
          completionRequirement: {
            tool: 'complete_task',
            reminder: 'r',
            recovery: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 3e9 },
          },
        }),
      ),
    );
    expect(recovery).toMatchObject({ fields: { field: 'completionRequirement.recovery.maxDelayMs' } });
    expect(thrown(build({}))).toBeUndefined();
  });
});
