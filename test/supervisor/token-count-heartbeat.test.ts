/**
 * A tool result that is hard to tokenize must not stall the agent's thread. Before token counting
 * was made linear, the o200k count of 200,000 repeated characters took ~30 s on the agent's thread:
 * the heartbeat (here 10 s: well under that, well over what a loaded CI machine stalls a thread) declared the thread dead and took the agent waiting beside it along.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { ThreadCrashed } from '../../src/supervisor/events.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { fixtures, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

it('an agent reading 200,000 repeated characters keeps its thread alive and its neighbour completes', async () => {
  const cwd = tempDir();
  writeFileSync(path.join(cwd, 'run.txt'), `${'A'.repeat(200_000)}\n`);
  const sup = new Supervisor({
    cwd,
    threads: 1,
    providers: { reader: { kind: 'module', module: path.join(fixtures, 'reader-provider.ts') } },
    defaultProvider: 'reader',
    heartbeat: { intervalMs: 100, timeoutMs: 10_000 },
    restart: { maxRetries: 0, baseDelayMs: 10, maxDelayMs: 10 },
  });
  supervisor = sup;
  const crashes: ThreadCrashed[] = [];
  sup.on('thread:crashed', (event) => crashes.push(event));

  // The bystander counts its own prompt with o200k first, so the reader's count is not the one
  // that pays for loading the table.
  const waiting = new Promise<void>((resolve) => sup.once('agent:waiting', () => resolve()));
  const bystander = sup.spawn('worker', { task: 'Wait.', model: 'gpt-4o' });
  // If the bystander ends instead of waiting, say how rather than hang.
  const early = await Promise.race([waiting.then(() => undefined), bystander.result]);
  expect(early).toBeUndefined();
  const reader = sup.spawn('worker', { task: 'Read run.txt.', model: 'gpt-4o' });

  expect(await reader.result).toMatchObject({ status: 'completed', result: { read: 'run.txt' } });
  bystander.send('instruction-go');
  expect(await bystander.result).toMatchObject({
    status: 'completed',
    result: { instruction: 'instruction-go' },
  });
  expect(crashes).toEqual([]);
});
