/**
 * Runs before each test file, in the worker process the files share. Tests are hermetic: no
 * provider key from the developer's environment reaches them (a Supervisor without `providers`
 * picks its provider from the environment, like the CLI), and no child process outlives the test
 * that started it.
 */
import { afterAll, afterEach, beforeEach } from 'vitest';
import { killChildren, markTest } from './fixtures/children.ts';
import { removeTempDirs } from './fixtures/temp-dirs.ts';

for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL']) {
  delete process.env[name];
}

// Registered before the file's own hooks: with vitest's default 'stack' order, this beforeEach
// runs first and these after-hooks run last, once the file's own cleanup has had its chance.
beforeEach(() => markTest(true));
afterEach(() => {
  markTest(false);
  killChildren('test');
});
afterAll(() => {
  killChildren();
  removeTempDirs();
});
// Test files share their process (vitest.config.ts: isolate false) and this file runs again before
// each of them: one exit hook per process, killing through the latest file's children registry
// (earlier files' children were killed by their own afterAll).
const shared = globalThis as { troupeKillChildrenOnExit?: () => void };
if (shared.troupeKillChildrenOnExit === undefined)
  process.once('exit', () => shared.troupeKillChildrenOnExit?.());
shared.troupeKillChildrenOnExit = () => killChildren();
