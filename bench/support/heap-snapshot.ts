/**
 * Heap snapshots of one actor-host thread with parked agents, to see what each parked agent keeps
 * alive. Starts a one-thread Supervisor that also imports bench/fixtures/heap-probe-tool.ts, parks
 * `warm` agents (so every lazily loaded module is in both snapshots), writes a snapshot, parks
 * `agents` more, writes a second one, then releases every agent. Compare the two with
 * bench/support/heap-diff.ts: the difference divided by `agents` is the cost of one parked agent.
 *
 * Run: node --import tsx bench/support/heap-snapshot.ts OUT_PREFIX [agents=1000] [warm=200]
 */
import { BroadcastChannel } from 'node:worker_threads';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { assertCompleted, scratchDir, waiterDefinition } from './workload.ts';

const prefix = process.argv[2] ?? '/tmp/troupe-heap';
const agents = Number(process.argv[3] ?? 1000);
const warm = Number(process.argv[4] ?? 200);
const PROBE = {
  module: new URL('../fixtures/heap-probe-tool.ts', import.meta.url).pathname,
  export: 'heapProbeTool',
};

const cwd = scratchDir('cwd');
const journals = scratchDir('journals');
const supervisor = new Supervisor({
  threads: 1,
  cwd: cwd.dir,
  compat: false,
  journalDir: journals.dir,
  definitions: [waiterDefinition()],
  toolModules: [PROBE],
  providers: { simulated: { kind: 'simulated', options: { waits: 1 } } },
});
const channel = new BroadcastChannel('troupe-heap-probe');

function snapshot(file: string): Promise<string> {
  return new Promise((resolve) => {
    channel.onmessage = (event: unknown) => {
      const data = (event as { data: { type: string; file: string } }).data;
      if (data.type === 'written') resolve(data.file);
    };
    channel.postMessage({ type: 'snapshot', file });
  });
}

const waiting = new Set<string>();
let target = 0;
let settle: () => void = () => {};
supervisor.on('agent:waiting', (event) => {
  waiting.add(event.agentId);
  if (waiting.size >= target) settle();
});

async function park(count: number, from: number) {
  target += count;
  const parked = new Promise<void>((resolve) => {
    settle = resolve;
  });
  const handles = Array.from({ length: count }, (_, i) =>
    supervisor.spawn('bench-waiter', { task: `Task ${from + i}: wait for an instruction, then report.` }),
  );
  await parked;
  await new Promise((resolve) => setTimeout(resolve, 250));
  return handles;
}

try {
  await supervisor.start();
  const first = await park(warm, 0);
  console.log('wrote', await snapshot(`${prefix}-a`));
  const second = await park(agents, warm);
  console.log('wrote', await snapshot(`${prefix}-b`));
  const handles = [...first, ...second];
  for (const handle of handles) handle.send('Report now.');
  assertCompleted(await Promise.all(handles.map((h) => h.result)), 'parked agents');
} finally {
  channel.close();
  await supervisor.close();
  cwd.remove();
  journals.remove();
}
