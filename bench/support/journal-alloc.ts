/**
 * Bytes allocated, scavenges and CPU of the journal write path alone: one agent's real event
 * sequence (a fan-out agent's journal, 38 events) written through a batching JournalWriter
 * (`fsync: 'never'`, as actor hosts use) for N agents, one file per agent, committing after every
 * event as the loop does before each side effect (`--turn` commits once per agent instead).
 *
 * node --import tsx bench/support/journal-alloc.ts JOURNAL.jsonl [agents=2000] [--turn] [--sample] [--dev-null]
 *
 * Prints CPU per agent and, with `--trace-gc`, count the scavenges in the output. `--sample` runs
 * V8's sampling heap profiler including objects scavenged since, and prints bytes allocated per
 * agent by function (top 15).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { JournalWriter } from '../../src/journal/writer.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: journal-alloc.ts JOURNAL.jsonl [agents] [--turn] [--sample]');
const agents = Number(process.argv[3] ?? 2000);
const perTurn = process.argv.includes('--turn');
const sample = process.argv.includes('--sample');
/** Every agent's journal is /dev/null: no file creation, so the CPU is the JavaScript path's. */
const devNull = process.argv.includes('--dev-null');

const inputs: AuditEventInput[] = readFileSync(file, 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => {
    const { seq: _s, prev: _p, hash: _h, ts: _t, ...body } = JSON.parse(line) as Record<string, unknown>;
    return body as unknown as AuditEventInput;
  });
const dir = mkdtempSync(path.join(process.env.TROUPE_BENCH_SCRATCH ?? '/var/tmp', 'journal-alloc-'));
let counter = 0;

function oneAgent(): void {
  counter += 1;
  const agentId = `agent-${counter}`;
  const writer = JournalWriter.open(devNull ? '/dev/null' : path.join(dir, `${agentId}.jsonl`), {
    fsync: 'never',
    batch: true,
  });
  for (const input of inputs) {
    writer.append({ ...input, agentId } as AuditEventInput);
    if (!perTurn) writer.commit();
  }
  writer.close();
}

function run(n: number): void {
  for (let i = 0; i < n; i += 1) oneAgent();
}

run(200); // warm-up: compile the path
let session: Session | undefined;
if (sample) {
  session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
}
const before = process.cpuUsage();
run(agents);
const cpu = process.cpuUsage(before);
console.log(
  `agents=${agents} events/agent=${inputs.length} CPU/agent=${((cpu.user + cpu.system) / agents).toFixed(1)}us (user ${(cpu.user / agents).toFixed(1)})`,
);
if (session) {
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
    profile: { head: Node; samples: { size: number; nodeId: number }[] };
  };
  interface Node {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    selfSize: number;
    children: Node[];
  }
  const byNode = new Map<number, Node>();
  const walk = (node: Node): void => {
    byNode.set(node.id, node);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const s of profile.samples) {
    const node = byNode.get(s.nodeId);
    const key = node
      ? `${node.callFrame.functionName || '(anon)'} ${path.basename(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`
      : '?';
    byFunction.set(key, (byFunction.get(key) ?? 0) + s.size);
    total += s.size;
  }
  console.log(`sampled bytes/agent=${(total / agents).toFixed(0)}`);
  for (const [key, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`${(bytes / agents).toFixed(0).padStart(8)} B/agent  ${key}`);
  }
}
rmSync(dir, { recursive: true, force: true });
