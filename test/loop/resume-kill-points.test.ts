/**
 * Resume from every point a crash can leave a journal at. A crash cuts the journal after some
 * event (appends are synchronous and in order), so every prefix of a finished run's journal is a
 * journal a killed agent could have left. Resuming each one must complete the agent without
 * running any tool call a second time, and the result must verify.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { SimulatedProvider } from '../../src/providers/simulated.ts';
import { builtinTools } from '../../src/tools/builtin/index.ts';
import { readFileTool } from '../../src/tools/builtin/read-file.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/types.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

const cwd = tempDir('troupe-kill-points-');
for (const name of ['a.md', 'b.md', 'c.md']) writeFileSync(path.join(cwd, name), `${name} text\n`);

/** Every execution of `read_file`, by the call id the loop journalled just before running it. */
class Executions {
  readonly log: { readonly callId: string; readonly path: string }[] = [];
  #current = '';

  constructor(before: readonly { readonly callId: string; readonly path: string }[] = []) {
    this.log.push(...before);
  }

  readonly sink = (journal: MemoryJournal) => ({
    append: (input: Parameters<MemoryJournal['append']>[0]) => {
      if (input.type === 'ToolCall') this.#current = input.callId;
      journal.append(input);
    },
  });

  registry(): ToolRegistry {
    const builtin = readFileTool as unknown as Tool;
    const recording: Tool = {
      ...builtin,
      execute: (args, ctx) => {
        this.log.push({ callId: this.#current, path: String(args.path) });
        return builtin.execute(args, ctx);
      },
    };
    return new ToolRegistry([recording, ...builtinTools().filter((tool) => tool.name !== builtin.name)]);
  }
}

const base = {
  agentId: 'agent-k',
  definition: makeDefinition(),
  task: 'Read a.md, b.md and c.md',
  model: 'simulated',
  cwd,
  systemPrompt: 'SYSTEM',
};

async function run(executions: Executions, resumeFrom?: readonly AuditEvent[]) {
  const journal = new MemoryJournal(resumeFrom ? { events: resumeFrom } : {});
  const outcome = await runAgent({
    ...base,
    provider: new SimulatedProvider(),
    registry: executions.registry(),
    journal: executions.sink(journal),
    ...(resumeFrom ? { resumeFrom } : {}),
  });
  return { outcome, events: journal.events };
}

/**
 * The executions a crash right after `prefix` leaves behind: every call with a recorded result
 * ran; a call whose ToolCall (and history entry) is the last thing journalled may have run or not.
 */
function executedBefore(
  prefix: readonly AuditEvent[],
  full: Executions,
  lastCallRan: boolean,
): { callId: string; path: string }[] {
  const finished = new Set(prefix.flatMap((event) => (event.type === 'ToolResult' ? [event.callId] : [])));
  const last = prefix.at(-1);
  const running = last?.type === 'HistoryAppended' && last.kind === 'tool_call' ? last.callId : undefined;
  return full.log.filter(
    (execution) => finished.has(execution.callId) || (lastCallRan && execution.callId === running),
  );
}

/** A crash between a ToolResult and the history entry that shows it to the model. */
function endsBetweenResultAndHistory(prefix: readonly AuditEvent[]): boolean {
  const last = prefix.at(-1);
  return last?.type === 'ToolResult' || last?.type === 'StateChanged';
}

async function expectResumes(
  prefix: readonly AuditEvent[],
  before: readonly { callId: string; path: string }[],
) {
  const executions = new Executions(before);
  const { outcome, events } = await run(executions, prefix);
  const where = `cut after seq ${prefix.length - 1} (${prefix.at(-1)?.type})`;
  expect(outcome.status, where).toBe('completed');
  const ids = executions.log.map((execution) => execution.callId);
  expect(new Set(ids).size, `${where}: ${JSON.stringify(executions.log)}`).toBe(ids.length);
  const paths = executions.log.map((execution) => execution.path);
  expect(new Set(paths).size, where).toBe(paths.length);
  expect(verifyJournal(events, { rerender: journalRerender() }), where).toMatchObject({ ok: true });
  expect(
    events.filter((event) => event.type === 'Completed' || event.type === 'Failed'),
    where,
  ).toHaveLength(1);
  return events;
}

const reference = new Executions();
const { events: full } = await run(reference);

describe('resuming from every point a crash can cut the journal', () => {
  it('the reference run reads each file once and completes', () => {
    expect(reference.log.map((execution) => execution.path)).toEqual(['a.md', 'b.md', 'c.md']);
    expect(full.at(-1)?.type).toBe('Completed');
  });

  it('every cut completes, runs no tool call twice, and verifies', async () => {
    let checked = 0;
    for (let cut = 1; cut < full.length; cut += 1) {
      const prefix = full.slice(0, cut);
      for (const lastCallRan of [false, true]) {
        await expectResumes(prefix, executedBefore(prefix, reference, lastCallRan));
        checked += 1;
      }
    }
    expect(checked).toBe(2 * (full.length - 1));
  });

  it('a crash during a resumed run resumes again from every point after the first resume', async () => {
    const firstCut = full.findIndex((event) => event.type === 'ToolCall' && event.args?.path === 'b.md') + 2;
    const firstPrefix = full.slice(0, firstCut);
    const firstBefore = executedBefore(firstPrefix, reference, true);
    const resumed = new Executions(firstBefore);
    const { events: second } = await run(resumed, firstPrefix);
    const resumedAt = second.findIndex((event) => event.type === 'Resumed');
    expect(resumedAt).toBe(firstCut);
    for (let cut = resumedAt + 1; cut < second.length; cut += 1) {
      const prefix = second.slice(0, cut);
      const events = await expectResumes(prefix, executedBefore(prefix, resumed, true));
      expect(events.filter((event) => event.type === 'Resumed')).toHaveLength(2);
    }
  });

  // The model learns a result only from its history entry: resume must re-add an entry the crash
  // cut off, or the model asks again and the call runs twice.
  it('a cut between a ToolResult and its history entry shows the recorded result and runs nothing again', async () => {
    const cuts = [];
    for (let cut = 1; cut < full.length; cut += 1) {
      if (endsBetweenResultAndHistory(full.slice(0, cut))) cuts.push(cut);
    }
    expect(cuts.length).toBeGreaterThan(0);
    for (const cut of cuts) {
      const prefix = full.slice(0, cut);
      await expectResumes(prefix, executedBefore(prefix, reference, true));
    }
  });
});
