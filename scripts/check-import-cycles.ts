/**
 * Import-cycle check, run by `npm run lint`:
 * - no cycle may span two folders, counting `import type` edges too (a folder is a layer: a cycle
 *   across two means neither can be read, tested or replaced without the other);
 * - no cycle of value imports at all, even inside one folder (ES modules in a cycle see each
 *   other's bindings uninitialised, depending on which one is loaded first).
 *
 *   node --import tsx scripts/check-import-cycles.ts [ROOT...]    (default: the repository's code)
 *
 * Only relative specifiers are followed. `import type` / `export type` are type edges; every other
 * import, re-export and literal `import('...')` is a value edge: with `verbatimModuleSyntax` an
 * `import { type A } from './a.ts'` still loads `./a.ts`. It reads files with the TypeScript parser
 * (already a dev dependency) instead of a cycle tool: madge and dependency-cruiser resolve imports
 * through their own module lookup and do not tell type-only edges apart in the way this rule needs.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** One import edge. */
export interface ImportEdge {
  readonly from: string;
  readonly to: string;
  readonly typeOnly: boolean;
}

/** A rule broken by one strongly connected group of files. */
export interface CycleViolation {
  readonly kind: 'cross-folder' | 'value';
  /** A cycle through the group, as paths relative to the root, first file repeated at the end. */
  readonly cycle: readonly string[];
}

const SOURCE = /\.(ts|mts|mjs|js)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git', '.troupe', 'results', 'corpus']);

/** Every source file below `dir`. */
export function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) files.push(...sourceFiles(full));
    } else if (entry.isFile() && SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      files.push(full);
    }
  }
  return files;
}

function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const target = path.resolve(path.dirname(from), specifier);
  const candidates = [target, target.replace(/\.js$/, '.ts'), `${target}.ts`, path.join(target, 'index.ts')];
  return candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
}

/** The relative imports of one file. */
export function importsOf(file: string): ImportEdge[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const edges: ImportEdge[] = [];
  const add = (specifier: ts.Expression | undefined, typeOnly: boolean): void => {
    if (specifier === undefined || !ts.isStringLiteralLike(specifier)) return;
    const to = resolveSpecifier(file, specifier.text);
    if (to !== undefined) edges.push({ from: file, to, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node.moduleSpecifier, node.importClause?.isTypeOnly === true);
    } else if (ts.isExportDeclaration(node)) {
      add(node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument)) add(argument.literal as ts.Expression, true);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

/** Strongly connected groups (Tarjan) of more than one file, or of one file importing itself. */
function cyclicGroups(nodes: readonly string[], next: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(to) ?? 0));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(to) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    for (;;) {
      const member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      group.push(member);
      if (member === node) break;
    }
    if (group.length > 1 || (next.get(node) ?? []).includes(node)) groups.push(group);
  };
  for (const node of nodes) if (!index.has(node)) connect(node);
  return groups;
}

/**
 * A shortest cycle through `group` that takes the edge `first`: the edge, then a breadth-first path
 * from its target back to its source. Without `first`, the group's first edge is taken.
 */
function cycleThrough(
  group: readonly string[],
  next: ReadonlyMap<string, readonly string[]>,
  first?: { readonly from: string; readonly to: string },
): string[] {
  const members = new Set(group);
  const edge =
    first ??
    group
      .flatMap((from) => (next.get(from) ?? []).filter((to) => members.has(to)).map((to) => ({ from, to })))
      .sort((a, b) => a.from.localeCompare(b.from))[0];
  if (edge === undefined) return [];
  const cameFrom = new Map<string, string | undefined>([[edge.to, undefined]]);
  const queue = [edge.to];
  while (queue.length > 0) {
    const node = queue.shift() ?? '';
    if (node === edge.from) break;
    for (const to of next.get(node) ?? []) {
      if (members.has(to) && !cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  const back: string[] = [];
  for (let at: string | undefined = edge.from; at !== undefined; at = cameFrom.get(at)) back.unshift(at);
  // back runs from edge.to to edge.from; the cycle starts at edge.from.
  return edge.from === edge.to ? [edge.from, edge.from] : [edge.from, ...back];
}

function adjacency(edges: readonly ImportEdge[], keep: (edge: ImportEdge) => boolean): Map<string, string[]> {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    if (!keep(edge)) continue;
    const list = next.get(edge.from) ?? [];
    if (!list.includes(edge.to)) list.push(edge.to);
    next.set(edge.from, list);
  }
  return next;
}

/** Every violation among `files` (absolute paths); cycles are reported relative to `root`. */
export function findViolations(root: string, files: readonly string[]): CycleViolation[] {
  const edges = files.flatMap((file) => importsOf(file));
  const relative = (file: string): string => path.relative(root, file);
  const violations: CycleViolation[] = [];
  const all = adjacency(edges, () => true);
  for (const group of cyclicGroups(files, all)) {
    const members = new Set(group);
    const crossing = group.flatMap((from) =>
      (all.get(from) ?? [])
        .filter((to) => members.has(to) && path.dirname(to) !== path.dirname(from))
        .map((to) => ({ from, to })),
    )[0];
    if (crossing)
      violations.push({ kind: 'cross-folder', cycle: cycleThrough(group, all, crossing).map(relative) });
  }
  const values = adjacency(edges, (edge) => !edge.typeOnly);
  for (const group of cyclicGroups(files, values)) {
    violations.push({ kind: 'value', cycle: cycleThrough(group, values).map(relative) });
  }
  return violations;
}

/** The report for `violations`, one paragraph each. */
export function describeViolations(violations: readonly CycleViolation[]): string {
  return violations
    .map((violation) => {
      const what =
        violation.kind === 'value'
          ? 'value-import cycle (no module may load itself through its imports)'
          : 'import cycle across folders (type imports included)';
      return `${what}:\n  ${violation.cycle.join('\n  -> ')}`;
    })
    .join('\n\n');
}

const DEFAULT_ROOTS = ['src', 'workers', 'bin', 'bench', 'test', 'examples', 'scripts'];

function main(): void {
  const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const args = process.argv.slice(2);
  const roots = (args.length > 0 ? args : DEFAULT_ROOTS)
    .map((root) => path.resolve(repo, root))
    .filter((root) => existsSync(root));
  const files = roots.flatMap((root) => sourceFiles(root));
  const violations = findViolations(repo, files);
  if (violations.length === 0) {
    process.stdout.write(`import cycles: none (${files.length} files)\n`);
    return;
  }
  process.stderr.write(`${describeViolations(violations)}\n\n${violations.length} import cycle(s)\n`);
  process.exitCode = 1;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
