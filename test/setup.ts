/**
 * Runs in every test process before its test file. Tests are hermetic: no provider key from the
 * developer's environment reaches them (a Supervisor without `providers` picks its provider from
 * the environment, like the CLI), and no child process outlives the test that started it.
 */
import { afterAll, afterEach, beforeEach } from 'vitest';
import { killChildren, markTest } from './fixtures/children.ts';

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
});
process.once('exit', () => killChildren());
