import type { ScoreInput } from '../../src/eval/types.ts';

/** A completed item with `output` and `expected`. */
export function item(output: unknown, expected?: unknown, extra: Partial<ScoreInput> = {}): ScoreInput {
  return {
    index: 0,
    task: 'Grade the document.',
    context: [],
    status: 'completed',
    output,
    agentId: 'run-0',
    ...(expected === undefined ? {} : { expected }),
    ...extra,
  };
}
