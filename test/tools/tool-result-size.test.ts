/**
 * A tool's outcome holds at most MAX_TOOL_RESULT_CHARS characters (its text and its state
 * updates' texts): a tool module returning 50 MB took ~470 MB of its thread's heap and wrote a
 * 50 MB journal line, though no model could be shown it.
 */
import { describe, expect, it } from 'vitest';
import { MAX_TOOL_RESULT_CHARS } from '../../src/constants.ts';
import type { Tool, ToolOutcome } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

function returning(name: string, outcome: () => ToolOutcome, async = false): Tool {
  return {
    name,
    description: `returns a fixed outcome`,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    readOnly: true,
    execute: async ? async () => outcome() : () => outcome(),
  };
}

describe('tool result size', () => {
  it('fails a call whose text is longer than MAX_TOOL_RESULT_CHARS, and keeps one at the bound', async () => {
    const toolbox = toolboxFor(await tempDir(), {}, [
      returning('huge', () => ({ ok: true, text: 'y'.repeat(MAX_TOOL_RESULT_CHARS + 1) }), true),
      returning('full', () => ({ ok: true, text: 'y'.repeat(MAX_TOOL_RESULT_CHARS) })),
    ]);
    const huge = await toolbox.call('huge', {});
    expect(huge).toMatchObject({ ok: false, canonicalName: 'huge', attempts: 1 });
    expect(huge.text).toBe(
      `huge failed: its result holds ${MAX_TOOL_RESULT_CHARS + 1} characters, more than a tool result may (${MAX_TOOL_RESULT_CHARS}), so it was dropped. Ask for less: a narrower query, a page of the output, or a summary.`,
    );
    const full = await toolbox.call('full', {});
    expect(full).toMatchObject({ ok: true });
    expect(full.text).toHaveLength(MAX_TOOL_RESULT_CHARS);
  });

  it('counts the texts of state updates with the result text, and drops the updates with it', async () => {
    const half = 'z'.repeat(MAX_TOOL_RESULT_CHARS / 2);
    const toolbox = toolboxFor(await tempDir(), {}, [
      returning('stateful', () => ({
        ok: true,
        text: 'updated',
        stateUpdates: [
          { key: 'a', text: half },
          { key: 'b', text: half },
          { key: 'c', text: null },
        ],
      })),
    ]);
    const result = await toolbox.call('stateful', {});
    expect(result.ok).toBe(false);
    expect(result.stateUpdates).toBeUndefined();
    expect(result.text).toContain(`its result holds ${MAX_TOOL_RESULT_CHARS + 7} characters`);
  });
});
