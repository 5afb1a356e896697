/**
 * Scale-out test setup: a real redis-server on 127.0.0.1 (a free port, a temp dir, AOF on, RDB
 * off) and `troupe worker` child processes. Suites skip, saying why, when redis-server is missing.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentDefinition } from '../../../src/definition/types.ts';
import { eventHash } from '../../../src/journal/chain.ts';
import { GENESIS_HASH } from '../../../src/journal/constants.ts';
import type { AuditEvent } from '../../../src/journal/events.ts';
import type { ProviderConfig } from '../../../src/protocol/messages.ts';
import type { SupervisorEvents } from '../../../src/supervisor/events.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { redisServerPath } from '../../fixtures/scaleout/processes.ts';
import { makeDefinition } from '../../prompt/make-definition.ts';

export {
  killWorkers,
  redisServerPath,
  startWorker,
  TestRedis,
  type TestWorker,
} from '../../fixtures/scaleout/processes.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const recordToolModule = path.join(repoRoot, 'test/fixtures/scaleout/record-tool.ts');
const stepperModule = path.join(repoRoot, 'test/fixtures/scaleout/stepper-provider.ts');

/** The stepper provider (see the fixture): `steps` calls of record_step, then complete_task. */
export function stepperProvider(steps: number, latencyMs = 0): ProviderConfig {
  return { kind: 'module', module: stepperModule, options: { steps, latencyMs } };
}

/** Why the suite is skipped, for its title. */
export const skipReason =
  redisServerPath === undefined ? ' (skipped: redis-server is not installed; apt install redis-server)' : '';

if (redisServerPath === undefined) {
  console.warn('scale-out tests skipped: redis-server is not installed (apt install redis-server)');
}

/** A definition for scale-out tests: only the named tools (plus the routed ones). */
export function definition(name: string, fields: Partial<AgentDefinition> = {}): AgentDefinition {
  return makeDefinition({ name, path: `/scaleout/${name}.md`, agentsMd: false, ...fields });
}

/** The lines the record tool wrote: `[agentId, note, pid]`. */
export function recordedSteps(file: string): [string, string, string][] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t') as [string, string, string]);
}

/** Why `events` is not an unbroken hash chain from seq 0, or undefined when it is. */
export function chainProblem(events: readonly AuditEvent[]): string | undefined {
  let prev = GENESIS_HASH;
  for (const [index, event] of events.entries()) {
    if (event.seq !== index) return `event ${index} has seq ${event.seq}`;
    if (event.prev !== prev) return `event ${index} does not point back to its predecessor`;
    if (eventHash(event) !== event.hash) return `event ${index} does not hash to its hash`;
    prev = event.hash;
  }
  return undefined;
}

/** A fresh name for queues and prefixes, so suites sharing a server never meet. */
export function uniqueName(label: string): string {
  return `${label}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Resolves with the first `name` event of `supervisor` that passes `test`. */
export function nextEvent<K extends keyof SupervisorEvents>(
  supervisor: Supervisor,
  name: K,
  test: (event: SupervisorEvents[K][0]) => boolean = () => true,
): Promise<SupervisorEvents[K][0]> {
  return new Promise((resolve) => {
    const listener = (...args: SupervisorEvents[K]): void => {
      const [event] = args;
      if (!test(event)) return;
      supervisor.off(name, listener as never);
      resolve(event);
    };
    supervisor.on(name, listener as never);
  });
}
