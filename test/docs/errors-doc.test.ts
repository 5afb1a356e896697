/**
 * docs/errors.md lists every error code troupe raises. This test reads src/ as text, collects the
 * codes, and fails with the codes the page does not list (and the ones it lists that src/ no longer
 * raises). A code that is not a string literal at its throw site (a variable, a parameter) cannot
 * be read off the site: every such site is named in DYNAMIC_SITES with where its codes come from,
 * and a new one fails the test until it is added there.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(rel);
    return entry.name.endsWith('.ts') ? [rel] : [];
  });
}

const sources = new Map(
  sourceFiles('src').map((file) => [file, readFileSync(path.join(repoRoot, file), 'utf8')]),
);

function source(file: string): string {
  const text = sources.get(file);
  if (text === undefined) throw new Error(`${file} is gone: update DYNAMIC_SITES in this test`);
  return text;
}

/** Every capture group 1 of `pattern` in `file`; throws when there is none (a pattern gone stale). */
function matches(file: string, pattern: RegExp): string[] {
  const found = [...source(file).matchAll(pattern)].map((match) => match[1] as string);
  if (found.length === 0) throw new Error(`${pattern} no longer matches in ${file}: update DYNAMIC_SITES`);
  return found;
}

/** The string literals of the first match of `pattern` in `file`. */
function literalsIn(file: string, pattern: RegExp): string[] {
  const found = pattern.exec(source(file))?.[0];
  if (found === undefined) throw new Error(`${pattern} no longer matches in ${file}: update DYNAMIC_SITES`);
  return [...found.matchAll(/'([a-z_0-9]+)'/g)].map((m) => m[1] as string);
}

/** The members of a string-literal union type `name` in `file`. */
function unionMembers(file: string, name: string): string[] {
  const declaration = new RegExp(`type ${name} =([^;]*);`).exec(source(file))?.[1];
  if (declaration === undefined) throw new Error(`type ${name} is gone from ${file}: update DYNAMIC_SITES`);
  return [...declaration.replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/'([a-z_0-9]+)'/g)].map(
    (m) => m[1] as string,
  );
}

/** troupe's error classes: TroupeError and every class src/errors.ts derives from it. */
const CLASSES = [
  'TroupeError',
  ...[...source('src/errors.ts').matchAll(/export class (\w+) extends \w*Error\b/g)].map(
    (m) => m[1] as string,
  ),
];

interface DynamicSite {
  /** Why the code is not a literal at the site, and where its codes come from. */
  readonly reason: string;
  readonly codes: () => readonly string[];
}

/**
 * Throw sites whose code is an expression without a string literal, keyed by `file: expression`
 * (the first argument of `new XError(...)`, or the `code` of a `{ name: 'XError', code }` object).
 */
const DYNAMIC_SITES: Readonly<Record<string, DynamicSite>> = {
  'src/providers/provider-error.ts: code': {
    reason: 'providerError(code, ...) builds every ProviderError: its code is a ProviderErrorCode',
    codes: () => unionMembers('src/providers/provider-error.ts', 'ProviderErrorCode'),
  },
  'src/providers/scripted.ts: code': {
    reason: "ScriptedProvider throws the error a test's script names: the script's code, not troupe's",
    codes: () => [],
  },
  'src/engines/redis/stream-journal.ts: code': {
    reason: 'a failed append to a Redis journal: the code is chosen from the script error text',
    codes: () => literalsIn('src/engines/redis/stream-journal.ts', /const code = message\.startsWith[^;]*;/),
  },
  'src/blocks/resolve.ts: code': {
    reason: "resolveAgentBlocks throws with the first block problem's code",
    codes: () => [
      ...matches('src/blocks/resolve.ts', /problem\(\s*'([a-z_]+)'/g),
      ...matches('src/blocks/resolve.ts', /\?\? '([a-z_]+)';/g),
    ],
  },
  'src/projection/projection.ts: code': {
    reason: "invalid(code, ...) checks the projection's options",
    codes: () => matches('src/projection/projection.ts', /\binvalid\(\s*'([a-z_]+)'/g),
  },
  'src/run-dir/yaml-source.ts: notFound': {
    reason: 'readYamlFile(file, what, notFound): plan_not_found by default, or what its caller passes',
    codes: () => [
      ...matches('src/run-dir/yaml-source.ts', /notFound = '([a-z_]+)'/g),
      ...matches('src/run-dir/plan-permissions.ts', /readYamlFile\([^)]*?'([a-z_]+_not_found)'/g),
    ],
  },
  'src/run-dir/plan-problems.ts: kind.code': {
    reason:
      'PlanProblems.throwIfAny(file, kind): invalid_plan for a plan, invalid_permissions for a permissions file',
    codes: () => matches('src/run-dir/plan-problems.ts', /code: '([a-z_]+)'/g),
  },
  'src/run-dir/yaml-source.ts: kind.code': {
    reason: 'readYamlFile(file, what, notFound, kind): the kind of file it reads, as for throwIfAny',
    codes: () => matches('src/run-dir/plan-problems.ts', /code: '([a-z_]+)'/g),
  },
  'src/supervisor/agents.ts: spent.code': {
    reason: "a spawn after the Supervisor's run budget is spent fails with the budget's code",
    codes: () => unionMembers('src/supervisor/run-budget.ts', 'RunBudgetCode'),
  },
  'src/loop/round.ts: code': {
    reason: "turnFailed(sofar, code, ...) ends a turn with a ProviderError of the loop's own finding",
    codes: () => [
      ...matches('src/loop/round.ts', /turnFailed\(\s*\{[^}]*\},\s*'([a-z_]+)'/g),
      ...matches('src/loop/round.ts', /unbounded\([^)']*'([a-z_]+)'/g),
    ],
  },
  'src/loop/decide.ts: code': {
    reason:
      "failure(code, ...) is the loop's ModelBehaviorError: its own literals and the stop conditions' codes",
    codes: () => [
      ...matches('src/loop/decide.ts', /\bfailure\(\s*'([a-z_]+)'/g),
      ...matches('src/loop/stop-conditions.ts', /\bcode: '([a-z_]+)'/g),
    ],
  },
};

/** Codes made neither by a constructor nor by an error object literal. */
const OTHER_CODES: Readonly<Record<string, () => readonly string[]>> = {
  'serializeError: any non-troupe error thrown': () => matches('src/errors.ts', /code: '([a-z_]+)'/g),
};

interface Collected {
  readonly codes: Set<string>;
  readonly unaccounted: string[];
  readonly dynamicSitesSeen: Set<string>;
}

function collect(): Collected {
  const codes = new Set<string>();
  const unaccounted: string[] = [];
  const dynamicSitesSeen = new Set<string>();
  const classes = CLASSES.join('|');
  const sites = [
    // `new UserError('code', ...)`: the first argument, up to its comma (codes never contain one).
    new RegExp(`new\\s+(?:${classes})\\(\\s*([^,]*?)\\s*,`, 'g'),
    // `{ name: 'ProviderError', code, ... }` or `code: 'x'`: an error built as plain data.
    new RegExp(`name: '(?:${classes})',\\s*code(?:: ([^,]*?))?\\s*,`, 'g'),
  ];
  for (const [file, text] of sources) {
    for (const pattern of sites) {
      for (const match of text.matchAll(pattern)) {
        const expression = (match[1] ?? 'code').replace(/\s+/g, ' ');
        // `kind === 'provider' ? 'a' : 'b'`: the codes are the branches, not the condition.
        const branches = expression.includes('?') ? expression.slice(expression.indexOf('?')) : expression;
        const literals = [...branches.matchAll(/'([a-z_0-9]+)'/g)].map((m) => m[1] as string);
        if (literals.length > 0) {
          for (const code of literals) codes.add(code);
          continue;
        }
        const key = `${file}: ${expression}`;
        const site = DYNAMIC_SITES[key];
        if (site === undefined) unaccounted.push(key);
        else {
          dynamicSitesSeen.add(key);
          for (const code of site.codes()) codes.add(code);
        }
      }
    }
  }
  for (const more of Object.values(OTHER_CODES)) for (const code of more()) codes.add(code);
  return { codes, unaccounted, dynamicSitesSeen };
}

/** The codes docs/errors.md lists: the first cell of every row of a table whose first header is `Code`. */
function documentedCodes(): Set<string> {
  const text = readFileSync(path.join(repoRoot, 'docs/errors.md'), 'utf8');
  const codes = new Set<string>();
  let inCodeTable = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) {
      inCodeTable = false;
      continue;
    }
    const first = line.split('|')[1]?.trim() ?? '';
    if (/^Code$/i.test(first)) inCodeTable = true;
    else if (inCodeTable && !/^:?-+:?$/.test(first)) {
      for (const match of first.matchAll(/`([a-z_0-9]+)`/g)) codes.add(match[1] as string);
    }
  }
  return codes;
}

describe('docs/errors.md', () => {
  const collected = collect();

  it('accounts for every throw site whose code is not a literal', () => {
    expect(collected.unaccounted, 'add these sites to DYNAMIC_SITES').toEqual([]);
    const unused = Object.keys(DYNAMIC_SITES).filter((key) => !collected.dynamicSitesSeen.has(key));
    expect(unused, 'these DYNAMIC_SITES no longer exist in src/').toEqual([]);
  });

  it('finds the codes it should (the collector is not silently broken)', () => {
    for (const code of ['run_dir_exists', 'supervisor_closed', 'rate_limited', 'step_limit', 'internal']) {
      expect(collected.codes).toContain(code);
    }
    expect(collected.codes.size).toBeGreaterThan(100);
  });

  it('lists every code src/ raises, and no other', () => {
    const documented = documentedCodes();
    const missing = [...collected.codes].filter((code) => !documented.has(code)).sort();
    const stale = [...documented].filter((code) => !collected.codes.has(code)).sort();
    expect({ missing, stale }).toEqual({ missing: [], stale: [] });
  });
});
