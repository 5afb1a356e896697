/**
 * Compares two V8 heap snapshots (see bench/support/heap-snapshot.ts): self sizes and counts
 * grouped by node type and constructor (plain objects by their first property names, closures by
 * function name and script position), sorted by the bytes the second snapshot adds. With
 * `--per N` the figures are divided by N (the agents added between the snapshots).
 *
 * Run: node --import tsx bench/support/heap-diff.ts A.heapsnapshot B.heapsnapshot [--per N] [--top 60]
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Group {
  count: number;
  bytes: number;
}

function groups(file: string): Map<string, Group> {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const { meta } = snap.snapshot;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const edgeCountAt = meta.node_fields.indexOf('edge_count');
  const edgeTypeAt = meta.edge_fields.indexOf('type');
  const edgeNameAt = meta.edge_fields.indexOf('name_or_index');
  const edgeToAt = meta.edge_fields.indexOf('to_node');
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const out = new Map<string, Group>();
  let edge = 0;
  for (let i = 0; i < snap.nodes.length; i += nf) {
    const type = nodeTypes[snap.nodes[i + typeAt] as number] as string;
    let name = snap.strings[snap.nodes[i + nameAt] as number] as string;
    const size = snap.nodes[i + sizeAt] as number;
    const edges = snap.nodes[i + edgeCountAt] as number;
    const props: string[] = [];
    const script = '';
    for (let e = 0; e < edges; e += 1) {
      const at = edge + e * ef;
      const kind = edgeTypes[snap.edges[at + edgeTypeAt] as number];
      const to = snap.edges[at + edgeToAt] as number;
      if (kind === 'property' && props.length < 6)
        props.push(snap.strings[snap.edges[at + edgeNameAt] as number] as string);
      if (
        type === 'closure' &&
        kind === 'internal' &&
        snap.strings[snap.edges[at + edgeNameAt] as number] === 'shared'
      ) {
        void to;
      }
    }
    edge += edges * ef;
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') {
      name = name.length > 50 ? `${name.slice(0, 50)}…` : name;
      name = `"${name}"`;
    }
    if (type === 'object' && (name === 'Object' || name === 'Array') && props.length > 0)
      name = `${name}{${props.join(',')}}`;
    if (type === 'number' || type === 'hidden' || type === 'code' || type === 'array')
      name = name.slice(0, 60);
    const key = `${type} ${name}${script}`;
    const group = out.get(key) ?? { count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += size;
    out.set(key, group);
  }
  return out;
}

const [fileA, fileB] = process.argv.slice(2);
if (!fileA || !fileB) throw new Error('usage: heap-diff A B [--per N] [--top K]');
const perAt = process.argv.indexOf('--per');
const per = perAt > 0 ? Number(process.argv[perAt + 1]) : 1;
const topAt = process.argv.indexOf('--top');
const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 60;
const a = groups(fileA);
const b = groups(fileB);
const rows: { key: string; count: number; bytes: number }[] = [];
for (const [key, group] of b) {
  const before = a.get(key) ?? { count: 0, bytes: 0 };
  rows.push({ key, count: (group.count - before.count) / per, bytes: (group.bytes - before.bytes) / per });
}
for (const [key, group] of a)
  if (!b.has(key)) rows.push({ key, count: -group.count / per, bytes: -group.bytes / per });
rows.sort((x, y) => y.bytes - x.bytes);
const total = rows.reduce((sum, row) => sum + row.bytes, 0);
console.log(`total ${total.toFixed(0)} bytes${per === 1 ? '' : ` per 1/${per}`}`);
const byType = new Map<string, number>();
for (const row of rows) {
  const type = row.key.split(' ')[0] as string;
  byType.set(type, (byType.get(type) ?? 0) + row.bytes);
}
console.log(
  [...byType]
    .sort((x, y) => y[1] - x[1])
    .map(([t, v]) => `${t} ${v.toFixed(0)}`)
    .join(' | '),
);
for (const row of rows.slice(0, top))
  console.log(`${row.bytes.toFixed(0).padStart(8)} ${row.count.toFixed(2).padStart(7)}  ${row.key}`);
