/**
 * Programmatic fan-out: one worker agent per file, results printed as they finish.
 * Run: node --import tsx examples/fanout.ts. With OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY
 * set, that provider answers; with none, the simulated model does (no key, no network) and troupe
 * warns once that it fell back to it.
 */
import { Supervisor } from 'troupe';

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
