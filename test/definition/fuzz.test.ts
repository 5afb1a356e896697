/**
 * No input makes the loader throw or hang: random text, and corpus files mutated by truncation,
 * byte flips, duplicated lines (keys) and deep nesting. Seeded, so a failure replays exactly.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type LoadResult, parseDefinition } from '../../src/definition/load.ts';
import { corpusDir } from './helpers.ts';

const SEED = 20_240_601;

const SEEDS = [
  'VoltAgent__awesome-claude-code-subagents/categories/08-business-product/backlog-grooming.md',
  'davila7__claude-code-templates/cli-tool/components/agents/data-ai/prompt-engineer.md',
  'davila7__claude-code-templates/cli-tool/components/agents/development-tools/unused-code-cleaner.md',
  'davila7__claude-code-templates/cli-tool/components/agents/security/read-only-auditor.md',
  'damilola-elegbede__claude-config/.claude/agents/code-archaeologist.md',
  'wshobson__agents/plugins/arm-cortex-microcontrollers/agents/arm-cortex-expert.md',
  '0xfurai__claude-code-subagents/agents/sqs-expert.md',
  'affaan-m__everything-claude-code/docs/ja-JP/agents/go-reviewer.md',
].map((name) => readFileSync(join(corpusDir, name), 'utf8').slice(0, 6000));

/** Characters that matter to YAML and to the fence finder. */
const SPECIAL = [
  ':',
  '-',
  '\n',
  '\r',
  ' ',
  '\t',
  '"',
  "'",
  '*',
  '&',
  '!',
  '[',
  ']',
  '{',
  '}',
  '#',
  '|',
  '>',
  '\uFEFF',
];

function checkResult(text: string, result: LoadResult): void {
  expect(result.definition === undefined).toBe(result.errors.length > 0);
  const lineCount = Math.max(1, text.split('\n').length);
  for (const problem of [...result.errors, ...result.warnings]) {
    expect(Number.isInteger(problem.line) && problem.line >= 1 && problem.line <= lineCount).toBe(true);
    expect(Number.isInteger(problem.column) && problem.column >= 1).toBe(true);
    expect(problem.path === '' || problem.path.startsWith('/')).toBe(true);
  }
}

function loadBoth(text: string): void {
  checkResult(text, parseDefinition(text, '/f.md', { source: 'project' }));
  checkResult(text, parseDefinition(text, '/f.md', { source: 'compat' }));
}

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('flip' as const),
    flips: fc.array(
      fc.tuple(
        fc.nat(),
        fc.oneof(fc.constantFrom(...SPECIAL), fc.string({ minLength: 1, maxLength: 1, unit: 'binary' })),
      ),
      {
        minLength: 1,
        maxLength: 12,
      },
    ),
  }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    line: fc.nat(),
    times: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({
    kind: fc.constant('nest' as const),
    line: fc.nat(),
    depth: fc.integer({ min: 50, max: 5000 }),
    style: fc.constantFrom('flow-seq', 'flow-map', 'block-map', 'block-seq'),
  }),
);

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function nesting(style: string, depth: number): string {
  switch (style) {
    case 'flow-seq':
      return `deep: ${'['.repeat(depth)}x${']'.repeat(depth)}`;
    case 'flow-map':
      return `deep: ${'{a: '.repeat(depth)}x${'}'.repeat(depth)}`;
    case 'block-map':
      return Array.from(
        { length: Math.min(depth, 400) },
        (_, level) => `${' '.repeat(level)}k${level}:`,
      ).join('\n');
    default:
      return Array.from({ length: Math.min(depth, 400) }, (_, level) => `${' '.repeat(level * 2)}-`).join(
        '\n',
      );
  }
}

function mutate(text: string, change: Mutation): string {
  const lines = text.split('\n');
  switch (change.kind) {
    case 'truncate':
      return text.slice(0, change.at % (text.length + 1));
    case 'flip': {
      const chars = [...text];
      for (const [at, replacement] of change.flips) {
        if (chars.length > 0) chars[at % chars.length] = replacement;
      }
      return chars.join('');
    }
    case 'duplicate': {
      const index = change.line % lines.length;
      lines.splice(index, 0, ...Array.from({ length: change.times }, () => lines[index] ?? ''));
      return lines.join('\n');
    }
    case 'nest': {
      lines.splice(1 + (change.line % Math.min(lines.length, 6)), 0, nesting(change.style, change.depth));
      return lines.join('\n');
    }
  }
}

describe('the loader under hostile input', () => {
  it('never throws on mutated corpus files, and its problems point inside the file', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SEEDS),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        (seed, changes) => {
          loadBoth(changes.reduce(mutate, seed));
        },
      ),
      { seed: SEED, numRuns: 150 },
    );
  });

  it('never throws on random frontmatter-shaped text', () => {
    const line = fc.oneof(
      fc.constantFrom(
        '---',
        '----',
        '    ---',
        '',
        'name: a',
        'description: d: e',
        'tools: *',
        '  - x',
        '? k',
      ),
      fc.string({ maxLength: 30, unit: fc.constantFrom(...SPECIAL, 'a', 'b', 'k', '1', '\\', '%', '@') }),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 25 }), fc.constantFrom('\n', '\r\n'), (lines, newline) => {
        loadBoth(lines.join(newline));
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it('never throws on arbitrary unicode text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400, unit: 'binary' }), (text) => {
        loadBoth(`---\n${text}`);
        loadBoth(text);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});
