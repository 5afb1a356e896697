/**
 * A fan-out's `usage` JSON events add up to each agent's result line: requests whose receipts a
 * dying thread journalled and never sent come as one event at the agent's end, marked
 * `unreported: true`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import type { RunEvent } from '../../src/run-dir/run-events.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { readResults, tempDir } from './helpers.ts';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/supervisor');

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unreported-'));
});
afterEach(() => cleanup());

describe('usage events of a fan-out whose thread died with receipts unsent', () => {
  it('end with one `unreported` event, and add up to the result line', async () => {
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      [
        'cwd: .',
        'threads: 1',
        'provider:',
        `  module: ${path.join(fixtures, 'counted-provider.ts')}`,
        'providerOptions:',
        `  log: ${path.join(dir, 'requests.log')}`,
        'toolModules:',
        `  - { module: ${path.join(fixtures, 'fault-tools.ts')}, export: faultTools }`,
        'runs:',
        '  - { agent: worker, task: "call exit_after_receipt" }',
      ].join('\n'),
    );
    const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
    const provider = chooseProvider({ plan: plan.provider, options: plan.providerOptions, env: {} });
    const runPlan = resolveRunPlan(plan, provider, {}, 'counted');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    const events: RunEvent[] = [];
    await new FanoutSession({
      plan: runPlan,
      writer,
      work: runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
      kind: 'fanout',
      definitions,
      onEvent: (event) => events.push(event),
    }).run();
    const [line] = readResults(writer.paths.results);
    expect(line?.status).toBe('completed');
    const usage = events.flatMap((event) => (event.type === 'usage' ? [event] : []));
    expect(usage.filter((event) => event.unreported === true)).toHaveLength(1);
    expect(usage.at(-1)?.unreported).toBe(true);
    expect(usage.reduce((sum, event) => sum + event.inputTokens, 0)).toBe(line?.usage.inputTokens);
  });
});
