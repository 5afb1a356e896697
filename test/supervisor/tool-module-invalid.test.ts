/**
 * A tool module the Supervisor cannot load is the user's mistake in its options: its agents fail
 * `invalid_request` (nothing ran, a retry fails the same way), not `crashed`.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('a tool module that does not load', () => {
  it('fails each agent with invalid_request and invalid_tool_module, naming the module', async () => {
    const cwd = tempDir();
    const missing = path.join(cwd, 'no-such-tools.mjs');
    supervisor = new Supervisor({
      threads: 1,
      cwd,
      providers: { sim: { kind: 'simulated' } },
      toolModules: [{ module: missing, export: 'tools' }],
    });
    const outcome = await supervisor.spawn('worker', { task: 'Review nothing.' }).result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { name: 'UserError', code: 'invalid_tool_module' },
    });
    expect(outcome.status === 'failed' ? outcome.error.message : '').toContain(missing);
  });
});
