/**
 * `troupe chat` with an agent whose turns must end with `complete_task` (the README's
 * `code-reviewer`), on the simulated model: every turn follows the plan of the first one (read
 * the files its message names, then `complete_task`). The simulated model counted the earlier
 * turns' tool results as the current turn's, so each turn after the first answered in text at
 * once and was reminded three times (four requests, four `… waiting for the model` lines).
 */
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import type { AuditEvent } from '../../src/journal/events.ts';
import { journalEvents, Project } from '../fixtures/cli/cli-helpers.ts';

const CODE_REVIEWER = `---
name: code-reviewer
description: Reviews a change for bugs and risky edits.
tools: [read_file, grep, complete_task]
permissionMode: plan
maxSteps: 20
completionRequirement:
  tool: complete_task
outputSchema:
  type: object
  required: [verdict]
  properties: { verdict: { type: string }, issues: { type: array, items: { type: string } } }
---
You are a careful code reviewer.
`;

let project: Project;

beforeEach(() => {
  project = new Project({
    'a.md': 'alpha\n',
    'b.md': 'beta\n',
    '.troupe/agents/code-reviewer.md': CODE_REVIEWER,
  });
});

afterEach(() => {
  project.remove();
});

/** Per turn (user message), the model requests and the tools called, in order. */
function turns(events: readonly AuditEvent[]): { requests: number; tools: string[] }[] {
  const found: { requests: number; tools: string[] }[] = [];
  for (const event of events) {
    if (event.type === 'Instructed') found.push({ requests: 0, tools: [] });
    const turn = found.at(-1);
    if (turn === undefined) continue;
    if (event.type === 'InferenceSubmitted') turn.requests += 1;
    if (event.type === 'ToolCall') turn.tools.push(event.name);
  }
  return found;
}

describe('troupe chat with a completion requirement on the simulated model', () => {
  it('ends every turn with complete_task, without reminders, reading what each message names', async () => {
    const journal = project.path('chat.jsonl');
    let output = '';
    const io: CliIO = {
      stdout: (text) => {
        output += text;
      },
      stderr: (text) => {
        output += text;
      },
    };
    const code = await chat('code-reviewer', { provider: 'simulated', journal, cwd: project.root }, io, {
      input: Readable.from(['review a.md please\nnow review b.md\nand once more\n']),
      output: new PassThrough(),
    });
    expect(code, output).toBe(0);
    const events = journalEvents(journal);
    expect(turns(events)).toEqual([
      { requests: 2, tools: ['read_file', 'complete_task'] },
      { requests: 2, tools: ['read_file', 'complete_task'] },
      { requests: 1, tools: ['complete_task'] },
    ]);
    const reads = events.flatMap((event) =>
      event.type === 'ToolCall' && event.name === 'read_file' ? [event.args] : [],
    );
    expect(reads).toEqual([{ path: 'a.md' }, { path: 'b.md' }]);
    // No turn was reminded to call complete_task.
    expect(events.some((event) => event.type === 'HistoryAppended' && event.kind === 'reminder')).toBe(false);
    expect(output.match(/code-reviewer> /g)).toHaveLength(3);
  });
});
