/**
 * A custom tool loaded in worker threads: ./word-count.ts is imported by every thread, and the
 * `counter` agent (./agents/counter.md) calls it. Run: node --import tsx examples/custom-tool/run.ts
 *
 * `rounds: 1` makes the simulated model call one tool before finishing; since `counter` is offered
 * no read_file, that tool is word_count.
 */
import { fileURLToPath } from 'node:url';
import { loadDefinitionFile, Supervisor } from 'troupe';

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url));
const { definition, errors } = await loadDefinitionFile(here('./agents/counter.md'));
if (!definition) throw new Error(errors.map((problem) => problem.message).join('\n'));

const supervisor = new Supervisor({
  threads: 2,
  definitions: [definition],
  toolModules: [{ module: here('./word-count.ts'), export: 'wordCount' }],
  providers: { simulated: { kind: 'simulated', options: { rounds: 1 } } },
});
supervisor.on(
  'agent:tool',
  (e) => e.ok !== undefined && console.log(`${e.agentId}: ${e.tool} ${e.ok ? 'ok' : 'failed'}`),
);
const texts = ['The quick brown fox jumps over the lazy dog.', 'Actors in threads, journals on disk.'];
const results = await supervisor
  .fanOut(texts.map((text) => ({ agent: 'counter', task: `Count the words of: ${text}` })))
  .all();
for (const { index, outcome } of results) {
  console.log(
    `${index}: ${outcome.status === 'completed' ? JSON.stringify(outcome.result) : outcome.error.message}`,
  );
}
await supervisor.close();
