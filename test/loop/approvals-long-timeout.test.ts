/**
 * An approval timeout past the longest timer delay (2147483647 ms), which `run()` takes unchecked
 * and a resumed journal may record: Node fires such a timer at once, so every call that asked was
 * denied `by: 'timeout'` before anybody could decide. The wait is timed in steps instead.
 */
import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/abort.ts';
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

describe('an approval timeout past the longest timer delay', () => {
  it('waits for the decision instead of timing out at once', async () => {
    const { tool, calls } = recordingTool('act', () => ({ ok: true, text: 'acted' }), false);
    const journal = new MemoryJournal();
    // A person who decides a moment later; a wait given up first (the timeout) decides nothing here.
    const requestApproval: NonNullable<AgentChannels['requestApproval']> = async (_request, signal) => {
      try {
        await sleep(30, signal);
      } catch {
        return null;
      }
      return { approved: true, by: 'person', decider: 'tty' };
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
      permissions: { approvalTimeoutMs: 3_000_000_000 },
    });
    expect(eventsOf(journal.events, 'ApprovalDecided')).toMatchObject([{ approved: true, by: 'person' }]);
    expect(calls).toHaveLength(1);
  });
});
