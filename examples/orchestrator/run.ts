/**
 * An orchestrator agent with workers: the orchestrator spawns one `worker` per file with
 * `spawn_agent`, instructs each with `send_instruction` (the workers wait in
 * `wait_for_instruction`), collects them with `await_agents` and finishes with `complete_task`.
 * Run: node --import tsx examples/orchestrator/run.ts
 *
 * The model is ./orchestrating-model.ts, a simulated model that knows the orchestration tools.
 * With a real model, drop `providers` (or name openai/anthropic) and keep the rest.
 */
import { fileURLToPath } from 'node:url';
import { loadDefinitionFile, Supervisor } from 'troupe';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));
const { definition, errors } = await loadDefinitionFile(here('./agents/orchestrator.md'));
if (!definition) throw new Error(errors.map((problem) => problem.message).join('\n'));

const supervisor = new Supervisor({
  threads: 2,
  cwd: here('../..'),
  definitions: [definition],
  providers: {
    simulated: {
      kind: 'module',
      module: here('./orchestrating-model.ts'),
      export: 'createOrchestratingModel',
    },
  },
});
supervisor.on(
  'agent:spawned',
  (e) => e.parentId && console.log(`spawned ${e.agentId}: ${e.task.slice(0, 60)}...`),
);
supervisor.on('agent:instructed', (e) => console.log(`${e.agentId} got: ${e.text}`));

const orchestrator = supervisor.spawn('orchestrator', {
  task: 'Review examples/fanout.ts, examples/harness/plan.yaml and examples/custom-tool/word-count.ts with one worker each.',
});
const outcome = await orchestrator.result;
console.log(outcome.status === 'completed' ? JSON.stringify(outcome.result, null, 2) : outcome.error.message);
await supervisor.close();
