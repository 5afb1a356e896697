import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';

/**
 * A provider that cannot be built in the thread (a built-in provider without its key, a module that
 * does not load; a bad option of a built-in provider is refused by new Supervisor() already) fails each agent as a bad request, journalled: every agent ends with exactly one
 * Completed or Failed event. Its journal was left empty and the agent reported as crashed.
 */
describe('a provider that cannot be built', () => {
  it.each([
    ['a missing API key', { kind: 'openai', options: { env: {} } }, 'invalid_request'],
    [
      'a module that does not load',
      { kind: 'module', module: '/nonexistent/provider.mjs' },
      'invalid_request',
    ],
  ] as const)('fails the agent with one journalled Failed event: %s', async (_what, config, reason) => {
    const journalDir = tempDir();
    const supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      journalDir,
      providers: { broken: config },
    });
    try {
      const handle = supervisor.spawn('worker', { task: 'Review nothing.' });
      const outcome = await handle.result;
      expect(outcome).toMatchObject({ status: 'failed', reason });
      const lines = readFileSync(path.join(journalDir, `${handle.id}.jsonl`), 'utf8')
        .trim()
        .split('\n');
      expect(lines.map((line) => (JSON.parse(line) as { type: string }).type)).toEqual(['Failed']);
      if (config.kind === 'module') {
        // Named as configured, not by the troupe file that imported it.
        expect(outcome.status === 'failed' && outcome.error).toMatchObject({
          code: 'invalid_provider_module',
          message: expect.stringMatching(
            /^Could not import the provider module \/nonexistent\/provider\.mjs: Cannot find module '\/nonexistent\/provider\.mjs'$/,
          ),
        });
      }
    } finally {
      await supervisor.close();
    }
  });
});
