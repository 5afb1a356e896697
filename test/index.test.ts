import { describe, expect, it } from 'vitest';
import * as troupe from '../src/index.ts';
import { ScriptedProvider } from '../src/testing.ts';

describe('public API', () => {
  it('exports the documented entry points', () => {
    for (const name of [
      'Supervisor',
      'runAgent',
      'Projection',
      'createProvider',
      'discoverAgents',
      'assembleSystemPrompt',
      'JournalWriter',
      'verifyJournal',
      'TroupeError',
      'Scoring',
      'prepareScorers',
      'compileSafePattern',
      'compareRunDirs',
      'checkGates',
      'fileBlockStore',
      'memoryBlockStore',
      'functionBlockStore',
      'readModelSettings',
      'mergeModelSettings',
      // docs/prompt-and-tools.md: a tool module exports these to configure the web tools.
      'createWebFetchTool',
      'createWebSearchTool',
    ]) {
      expect(troupe).toHaveProperty(name);
    }
  });

  it('runs an agent in-process with the scripted model from troupe/testing', async () => {
    const definition = await troupe.getAgent('worker', { cwd: process.cwd() });
    const provider = new ScriptedProvider([
      { toolCalls: [{ name: 'complete_task', arguments: { result: { greeting: 'hello' } } }] },
    ]);
    const journal = new troupe.MemoryJournal();
    const outcome = await troupe.runAgent({
      agentId: 'demo',
      definition,
      task: 'Say hello.',
      provider,
      model: 'test',
      cwd: process.cwd(),
      journal,
    });
    provider.assertAllUsed();
    expect(outcome).toMatchObject({ status: 'completed', result: { greeting: 'hello' } });
    expect(troupe.verifyJournal(journal.events, { rerender: troupe.journalRerender() }).ok).toBe(true);
  });
});
