/**
 * Every integer flag takes decimal digits and nothing else, and says so the same way: `1e3`, `0x10`
 * and `2.0` passed `Number()` (`--max-run-tokens 1e3` ran with a budget of 1000), and the
 * commands quoted a bad value three different ways.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../fixtures/cli/cli-helpers.ts';

/** A command line with `VALUE` where the integer goes; nothing runs: the flag fails first. */
const FLAGS: readonly (readonly string[])[] = [
  ['fanout', 'plan.yaml', '--max-run-tokens', 'VALUE'],
  ['fanout', 'plan.yaml', '--threads', 'VALUE'],
  ['fanout', 'plan.yaml', '--concurrency', 'VALUE'],
  ['fanout', 'plan.yaml', '--max-task-line-bytes', 'VALUE'],
  ['fanout', 'plan.yaml', '--redis-down-timeout-ms', 'VALUE'],
  ['fanout', 'plan.yaml', '--retain-seconds', 'VALUE'],
  ['fanout', 'plan.yaml', '--request-timeout-ms', 'VALUE'],
  ['fanout', 'plan.yaml', '--max-output-tokens', 'VALUE'],
  ['fanout', 'plan.yaml', '--seed', 'VALUE'],
  ['resume', 'dir', '--max-run-tokens', 'VALUE'],
  ['run', 'agent', '--task', 't', '--max-steps', 'VALUE'],
  ['run', 'agent', '--task', 't', '--max-tokens', 'VALUE'],
  ['run', 'agent', '--task', 't', '--time-limit', 'VALUE'],
  ['run', 'agent', '--task', 't', '--idle-timeout-ms', 'VALUE'],
  ['run', 'agent', '--task', 't', '--top-k', 'VALUE'],
  ['replay', 'dir', '--threads', 'VALUE'],
  ['replay', 'dir', '--concurrency', 'VALUE'],
];

describe('integer flags', () => {
  it('refuse exponents, hex, fractions and signs, quoting the value the same way on every command', async () => {
    for (const argv of FLAGS) {
      for (const bad of ['1e3', '0x10', '2.0', '+5', 'two']) {
        const result = await runCli(...argv.map((arg) => (arg === 'VALUE' ? bad : arg)));
        const shown = `${argv.join(' ')} = ${bad}`;
        expect(result.code, shown).toBe(1);
        expect(result.stderr, shown).toContain(`(decimal digits only), got \`"${bad}"\` (string).`);
      }
    }
  });

  it('a value in digits out of range names the range, in the same words', async () => {
    const steps = await runCli('run', 'agent', '--task', 't', '--max-steps', '500');
    expect(steps.stderr).toContain(
      'Expected a positive integer of at most 250 (runs stop at 250 model requests), got `"500"` (string).',
    );
    const threads = await runCli('fanout', 'plan.yaml', '--threads', '0');
    expect(threads.stderr).toContain('Expected a positive integer, got `"0"` (string).');
  });
});
