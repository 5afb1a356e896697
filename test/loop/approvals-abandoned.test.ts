/**
 * A wait for an approval that its runner ends without a decision (a Ctrl-C or a cancel reaching
 * the thread's mailbox before the agent's own signal) decided nothing: it must not be journalled as
 * a decision by `timeout` ("no decision within 10 min" seconds after the request), nor, with
 * `onTimeout: 'allow'`, approve the call.
 */
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import type { AgentChannels } from '../../src/loop/types.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import planProvider, { planTask } from '../fixtures/approvals/plan-provider.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { eventsOf, recordingTool, tempDir } from './helpers.ts';

const definition = makeDefinition({
  name: 'asker',
  agentsMd: false,
  permissions: { allow: [], ask: ['act'], deny: [] },
});

async function runAbandoned(onTimeout: 'deny' | 'allow') {
  const { tool, calls } = recordingTool('act', () => ({ ok: true, text: 'acted' }), false);
  const journal = new MemoryJournal();
  const controller = new AbortController();
  // The runner gives the wait up (null) and the cancel reaches the agent a moment later, as the
  // threads engine's mailbox does on Ctrl-C.
  const requestApproval: NonNullable<AgentChannels['requestApproval']> = async () => {
    setTimeout(() => controller.abort(new Error('interrupted (Ctrl-C)')), 0);
    return null;
  };
  await runAgent({
    agentId: 'agent-1',
    definition,
    task: planTask([{ name: 'act', args: { value: 'once' } }]),
    provider: planProvider(),
    model: 'm',
    registry: createToolRegistry([tool]),
    cwd: tempDir(),
    systemPrompt: 'SYSTEM',
    journal,
    channels: { requestApproval },
    permissions: { approvalTimeoutMs: 600_000, onTimeout },
    signal: controller.signal,
  });
  return { events: journal.events, ran: calls };
}

describe('an approval wait ended without a decision', () => {
  it.each(['deny', 'allow'] as const)(
    'is no timeout decision (onTimeout: %s) and runs nothing',
    async (onTimeout) => {
      const { events, ran } = await runAbandoned(onTimeout);
      expect(eventsOf(events, 'ApprovalRequested')).toHaveLength(1);
      expect(eventsOf(events, 'ApprovalDecided')).toEqual([]);
      expect(ran).toEqual([]);
    },
  );
});
