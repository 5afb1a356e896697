import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../../src/journal/reader.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { makeDefinition } from '../../prompt/make-definition.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

/** The outcome, or 'unsettled' after a hang guard (generous: a loaded machine starts threads slowly). */
function settled<T>(promise: Promise<T>): Promise<T | 'unsettled'> {
  return Promise.race([
    promise,
    new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 60_000).unref()),
  ]);
}

describe('a parent whose thread dies between its spawn_agent call and the reply', () => {
  // On one thread the child is placed on the parent's thread, blocked, and dies with it unstarted.
  it.each([
    { threads: 2, where: 'on another thread' },
    { threads: 1, where: "on the parent's thread" },
  ])(
    'gets the child started $where when it restarts: one child, its result delivered',
    async ({ threads }) => {
      const dir = tempDir();
      const journalDir = tempDir();
      supervisor = policySupervisor({
        cwd: tempDir(),
        journalDir,
        threads,
        providers: {
          spawnDeath: {
            kind: 'module',
            module: path.join(fixtures, 'spawn-death-provider.ts'),
            options: { dir },
          },
        },
        defaultProvider: 'spawnDeath',
        restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 10 },
      });
      const sup = supervisor;
      const definition = makeDefinition({
        name: 'delegator',
        path: '/spawn-death/delegator.md',
        agentsMd: false,
        tools: ['spawn_agent', 'await_agents', 'complete_task'],
      });
      const started: string[] = [];
      const restarted: string[] = [];
      sup.on('agent:restarted', (event) => restarted.push(event.agentId));
      const parent = sup.spawn(definition, { task: 'Delegate, then report.' });
      sup.on('agent:started', (event) => {
        if (event.agentId === parent.id || event.resumed) return;
        started.push(event.agentId);
        // The parent's thread is blocked right after posting the call: it ends now, reply unread.
        writeFileSync(path.join(dir, 'child-started'), 'x');
      });

      const outcome = await settled(parent.result);
      expect(restarted).toContain(parent.id);
      expect(started).toHaveLength(1);
      const child = started[0] ?? '';
      expect(outcome).toMatchObject({ status: 'completed', result: { child } });
      const awaited = JSON.parse((outcome as { result: { awaited: string } }).result.awaited) as unknown;
      expect(awaited).toMatchObject([{ agentId: child, status: 'completed', result: { child: 'done' } }]);
      // The resumed call got the kept outcome: "Spawned subagent <child>", not "interrupted".
      const results = readJournal(path.join(journalDir, `${parent.id}.jsonl`)).events.filter(
        (event) => event.type === 'ToolResult' && event.name === 'spawn_agent',
      );
      expect(results).toMatchObject([
        { ok: true, text: expect.stringContaining(`Spawned subagent ${child}`) },
      ]);
    },
  );
});
