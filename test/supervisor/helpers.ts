import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir as makeTempDir } from '../fixtures/temp-dirs.ts';

export const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/supervisor');

/** A new temp folder, removed after the test file (test/fixtures/temp-dirs.ts). */
export function tempDir(prefix = 'troupe-sup-'): string {
  return makeTempDir(prefix);
}

/**
 * A supervisor whose default provider is the policy test model (falls back to simulated). Its
 * threads keep the default heartbeat (a 20 s timeout): on a loaded machine a healthy thread can go
 * several seconds without answering, and a shorter timeout restarted agents the test did not crash.
 * A test that needs a stuck thread found sets its own.
 */
export function policySupervisor(options: SupervisorOptions = {}): Supervisor {
  return new Supervisor({
    threads: 2,
    providers: {
      policy: { kind: 'module', module: path.join(fixtures, 'policy-provider.ts') },
      simulated: { kind: 'simulated' },
    },
    restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    ...options,
  });
}

/** The built-in `worker` definition as an orchestrator: it may spawn, instruct and await agents. */
export async function orchestratorDefinition() {
  const { getAgent } = await import('../../src/definition/discovery.ts');
  const worker = await getAgent('worker', { cwd: tempDir() });
  return {
    ...worker,
    name: 'orchestrator',
    tools: ['spawn_agent', 'send_instruction', 'await_agents', 'complete_task'],
  };
}
