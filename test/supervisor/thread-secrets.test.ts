/**
 * A credential registered where an agent runs (a module provider's own key) is known to the
 * supervisor's thread before the agent's result arrives, so what the program's thread writes of
 * that result (a run directory's results.jsonl, the CLI's summary) masks it.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { redactValue } from '../../src/journal/redact.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';

const KEYED = fileURLToPath(new URL('../fixtures/supervisor/keyed-provider.ts', import.meta.url));
/** The fixture's key, copied: importing the fixture here would not register it, but keep it apart. */
const KEY = 'Kp3vN8qZ1xW6mT4rY9sB';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('credentials registered in an agent thread', () => {
  it('are masked in this thread by the time the agent result arrives', async () => {
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { keyed: { kind: 'module', module: KEYED } },
    });
    const outcome = await supervisor.spawn('worker', { task: 'Say the key.' }).result;
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    // The deliverable is the model's; what is written of it is masked.
    expect(outcome.result).toEqual({ summary: `The key is ${KEY}.` });
    expect(redactValue(outcome.result)).toEqual({ summary: 'The key is [REDACTED].' });
  }, 60_000);
});
