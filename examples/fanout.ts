/**
 * Programmatic fan-out: one worker agent per file, results printed as they finish.
 * Run: node --import tsx examples/fanout.ts (the simulated model answers; no key needed).
 * For a real model: new Supervisor({ providers: { openai: { kind: 'openai' } } }) with OPENAI_API_KEY set.
 */
import { Supervisor } from '../src/index.ts';

const files = ['package.json', 'docs/cli.md', 'docs/examples.md', 'src/index.ts'];
const supervisor = new Supervisor({ threads: 2 });
const fanOut = supervisor.fanOut(
  files.map((file) => ({ agent: 'worker', task: `Review ${file} and report one strength and one risk.` })),
  { concurrency: 4 },
);
for await (const { index, agentId, outcome } of fanOut) {
  const text = outcome.status === 'completed' ? JSON.stringify(outcome.result) : outcome.error.message;
  console.log(`${files[index]} (${agentId}): ${outcome.status} ${text}`);
}
await supervisor.close();
