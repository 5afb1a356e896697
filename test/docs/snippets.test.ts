/**
 * Every TypeScript block of README.md and docs/*.md type-checks against troupe's public API, as a
 * user who copies it into a project of their own would compile it: `troupe` and `troupe/testing`
 * resolve to the package's entry points (here src/index.ts and src/testing.ts, as tsconfig.json's
 * `paths` make them), and nothing else of the repository is reachable (an import of `./src/...`
 * works only in a clone). A block that imports nothing from troupe is a fragment: the troupe
 * exports it names are imported for it. Names a block uses without declaring them (`cwd`,
 * `definition`, `specs`) are placeholders for the reader's own values and are not errors, unless
 * the name is one troupe exports (then the block forgot its import). Everything else a strict
 * compile finds is: a wrong argument list, an option that does not exist, a name troupe does not
 * export, a syntax error.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Snippet {
  /** `docs/journal.md:108`: the line of the opening fence. */
  readonly where: string;
  readonly doc: string;
  /** Line (1-based) in the doc of the block's first line of code. */
  readonly firstLine: number;
  readonly code: string;
}

/** The ```ts blocks of one Markdown file. */
function snippetsOf(doc: string): Snippet[] {
  const lines = readFileSync(path.join(repoRoot, doc), 'utf8').split('\n');
  const found: Snippet[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i] ?? '')) continue;
    let end = i + 1;
    while (end < lines.length && !(lines[end] ?? '').startsWith('```')) end += 1;
    found.push({ where: `${doc}:${i + 1}`, doc, firstLine: i + 2, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return found;
}

function documents(): string[] {
  const docs = readdirSync(path.join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/** Names a file exports, values and types alike. */
function exportedNames(program: ts.Program, file: string): Set<string> {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const symbol = source && checker.getSymbolAtLocation(source);
  if (symbol === undefined) throw new Error(`${file} is not in the program`);
  return new Set(checker.getExportsOfModule(symbol).map((exported) => exported.name));
}

const CANNOT_FIND_NAME = new Set([
  2304, // Cannot find name 'x'.
  2552, // Cannot find name 'x'. Did you mean 'y'?
  18004, // No value exists in scope for the shorthand property 'x'.
]);

/**
 * The compiler options of a user's project (docs/install.md's tsconfig.json, with
 * `noUncheckedIndexedAccess`), plus what reaching troupe's sources instead of dist/ needs.
 */
const OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  strict: true,
  noUncheckedIndexedAccess: true,
  types: ['node'],
  noEmit: true,
  skipLibCheck: true,
  allowImportingTsExtensions: true,
  resolveJsonModule: true,
  baseUrl: repoRoot,
  paths: { troupe: ['./src/index.ts'], 'troupe/testing': ['./src/testing.ts'] },
  // Each block is its own module (top-level await, no clashes between blocks' names), and a
  // placeholder's parameters are the reader's to type.
  moduleDetection: ts.ModuleDetectionKind.Force,
  noImplicitAny: false,
};

/** Names a block declares or imports itself: a fragment's prelude must not import them again. */
function ownNames(code: string): Set<string> {
  const names = new Set<string>();
  for (const match of code.matchAll(/\b(?:interface|type|class|function|const|let|var|enum)\s+([\w$]+)/g)) {
    names.add(match[1] as string);
  }
  for (const match of code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (match[1] as string).split(',')) {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .at(-1)
        ?.replace(/^type\s+/, '');
      if (name) names.add(name);
    }
  }
  return names;
}

function checkSnippets(snippets: readonly Snippet[]): string[] {
  const index = path.join(repoRoot, 'src/index.ts');
  const testing = path.join(repoRoot, 'src/testing.ts');
  // The entry points alone first, to know what a fragment may import; the snippets' program
  // reuses their parsed files.
  const apiProgram = ts.createProgram([index, testing], OPTIONS);
  const publicNames = exportedNames(apiProgram, index);

  const virtual = new Map<string, { snippet: Snippet; prelude: number; text: string }>();
  snippets.forEach((snippet, n) => {
    const own = ownNames(snippet.code);
    const used = /from\s+['"]troupe(\/testing)?['"]/.test(snippet.code)
      ? []
      : [...publicNames].filter(
          (name) =>
            !own.has(name) &&
            new RegExp(`(?<![\\w$.])${name.replace(/\$/g, '\\$')}(?![\\w$])`).test(snippet.code),
        );
    const prelude = used.length === 0 ? '' : `import { ${used.join(', ')} } from 'troupe';\n`;
    const file = path.join(repoRoot, '.doc-snippets', `${n}.mts`);
    virtual.set(file, { snippet, prelude: prelude === '' ? 0 : 1, text: `${prelude}${snippet.code}\n` });
  });

  const host = ts.createCompilerHost(OPTIONS);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (file, language, onError, create) => {
    const entry = virtual.get(path.resolve(file));
    if (entry !== undefined) return ts.createSourceFile(file, entry.text, language, true);
    return getSourceFile(file, language, onError, create);
  };
  host.fileExists = (file) => virtual.has(path.resolve(file)) || fileExists(file);
  host.readFile = (file) => virtual.get(path.resolve(file))?.text ?? readFile(file);
  const program = ts.createProgram([...virtual.keys()], OPTIONS, host, apiProgram);

  const problems: string[] = [];
  for (const [file, { snippet, prelude }] of virtual) {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`${snippet.where} did not load`);
    const at = (position: number): string => {
      const line = source.getLineAndCharacterOfPosition(position).line - prelude;
      return `${snippet.doc}:${snippet.firstLine + line}`;
    };
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      if (statement.moduleSpecifier.text.startsWith('.')) {
        problems.push(
          `${at(statement.getStart())}: imports ${statement.moduleSpecifier.text}, which only a clone has (import from 'troupe')`,
        );
      }
    }
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    for (const diagnostic of diagnostics) {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
      if (CANNOT_FIND_NAME.has(diagnostic.code)) {
        const name = /'([^']+)'/.exec(message)?.[1] ?? '';
        if (!publicNames.has(name)) continue;
      }
      problems.push(`${at(diagnostic.start ?? 0)}: TS${diagnostic.code}: ${message}`);
    }
  }
  return problems;
}

/** Blocks with a known mistake each, checked with the real ones: the checker must catch them. */
const PLANTED: Snippet[] = [
  {
    where: 'planted/a.md:1',
    doc: 'planted/a.md',
    firstLine: 2,
    code: "import { Supervisor } from 'troupe';\nnew Supervisor().spawn('x', 'task', {});",
  },
  {
    where: 'planted/b.md:1',
    doc: 'planted/b.md',
    firstLine: 2,
    code: "import { JournalWriter } from './src/journal/writer.ts';\nvoid JournalWriter;",
  },
  {
    where: 'planted/c.md:1',
    doc: 'planted/c.md',
    firstLine: 2,
    code: "import { runAgent } from 'troupe';\nnew Supervisor({ threads: 2 });\nvoid runAgent;",
  },
  {
    where: 'planted/d.md:1',
    doc: 'planted/d.md',
    firstLine: 2,
    code: "new Supervisor({ threads: 'two' });\nvoid placeholder;\ninterface TokenCounter { n: number }",
  },
];

describe('TypeScript snippets of README.md and docs/', () => {
  const snippets = documents().flatMap(snippetsOf);
  let problems: string[] | undefined;
  // One program for every block, the planted ones too: building it is most of the time.
  const check = (): string[] => {
    problems ??= checkSnippets([...snippets, ...PLANTED]);
    return problems;
  };

  it('finds the snippets (the extraction is not silently broken)', () => {
    expect(snippets.length).toBeGreaterThan(15);
    expect(snippets.map((snippet) => snippet.doc)).toContain('docs/install.md');
  });

  it('catches a wrong call, a clone-only import and a missing import (the checker is not lenient)', () => {
    const planted = check().filter((problem) => problem.startsWith('planted/'));
    expect(planted.some((p) => p.startsWith('planted/a.md:3: TS2554'))).toBe(true);
    expect(planted.some((p) => p.startsWith('planted/b.md:2: imports ./src/journal/writer.ts'))).toBe(true);
    expect(planted.some((p) => p.startsWith("planted/c.md:3: TS2304: Cannot find name 'Supervisor'"))).toBe(
      true,
    );
    expect(planted.some((p) => p.startsWith('planted/d.md:2: TS2322'))).toBe(true);
    expect(planted.filter((p) => p.startsWith('planted/d.md'))).toHaveLength(1);
  });

  it('type-check against the public API', () => {
    expect(check().filter((problem) => !problem.startsWith('planted/'))).toEqual([]);
  });
});
