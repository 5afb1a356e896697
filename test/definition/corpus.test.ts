/**
 * The real-world corpus (test/fixtures/corpus/agent-definitions): 263 Claude Code definition files as
 * found in public repositories, with the edge cases listed in its SOURCES.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type LoadResult, parseDefinition } from '../../src/definition/load.ts';
import { ORCHESTRATION_TOOL_NAMES } from '../../src/protocol/messages.ts';
import { BUILTIN_TOOL_NAMES } from '../../src/tools/builtin/index.ts';
import { corpusDir } from './helpers.ts';

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory() ? markdownFiles(join(dir, entry.name)) : [join(dir, entry.name)],
    )
    .filter((file) => file.endsWith('.md') && !file.endsWith('SOURCES.md'))
    .sort();
}

const files = markdownFiles(corpusDir).map((path) => ({
  path,
  name: relative(corpusDir, path),
  text: readFileSync(path, 'utf8'),
}));

/** Independent of the loader: a file "has frontmatter" when its first non-blank line is `---`. */
function hasFrontmatter(text: string): boolean {
  const first = text
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .find((line) => line.trim() !== '');
  return first?.trim() === '---';
}
const withFrontmatter = files.filter((file) => hasFrontmatter(file.text));
const withoutFrontmatter = files.filter((file) => !hasFrontmatter(file.text));

/**
 * SOURCES.md group A (frontmatter strict YAML rejects), with the line of the culprit: the `: ` in
 * an unquoted one-line description (A.1), the first `user: ` of an example continued on indented
 * lines (A.2), the column-1 continuation line (A.3), the `*` of `tools: *` (A.4) and the `**` that
 * opens a bold description (A.5).
 */
const STRICT_YAML_FAILURES: Record<string, { line: number; char: string }> = {
  'VoltAgent__awesome-claude-code-subagents/categories/04-quality-security/gdpr-ccpa-compliance.md': {
    line: 3,
    char: ':',
  },
  'VoltAgent__awesome-claude-code-subagents/categories/07-specialized-domains/hipaa-compliance.md': {
    line: 3,
    char: ':',
  },
  'VoltAgent__awesome-claude-code-subagents/categories/08-business-product/assumption-mapping.md': {
    line: 3,
    char: ':',
  },
  'VoltAgent__awesome-claude-code-subagents/categories/08-business-product/backlog-grooming.md': {
    line: 3,
    char: ':',
  },
  'VoltAgent__awesome-claude-code-subagents/categories/08-business-product/growth-loops.md': {
    line: 3,
    char: ':',
  },
  'VoltAgent__awesome-claude-code-subagents/categories/10-research-analysis/cohort-analysis.md': {
    line: 3,
    char: ':',
  },
  'davila7__claude-code-templates/.claude/agents/agent-expert.md': { line: 3, char: ':' },
  'davila7__claude-code-templates/.claude/agents/blog-writer.md': { line: 3, char: ':' },
  'davila7__claude-code-templates/.claude/agents/command-expert.md': { line: 3, char: ':' },
  'davila7__claude-code-templates/cli-tool/components/agents/deep-research-team/research-synthesizer.md': {
    line: 4,
    char: ':',
  },
  'davila7__claude-code-templates/cli-tool/components/agents/expert-advisors/droid.md': {
    line: 3,
    char: ':',
  },
  'msitarzewski__agency-agents/specialized/zk-steward.md': { line: 3, char: ':' },
  'vijaythecoder__awesome-claude-agents/agents/specialized/rails/rails-backend-expert.md': {
    line: 3,
    char: ':',
  },
  'davila7__claude-code-templates/cli-tool/components/agents/deep-research-team/data-analyst.md': {
    line: 4,
    char: ':',
  },
  'davila7__claude-code-templates/cli-tool/components/agents/deep-research-team/research-brief-generator.md':
    { line: 4, char: ':' },
  'davila7__claude-code-templates/cli-tool/components/agents/data-ai/prompt-engineer.md': {
    line: 7,
    char: ':',
  },
  'affaan-m__everything-claude-code/docs/ja-JP/agents/go-reviewer.md': { line: 5, char: 'コ' },
  'davila7__claude-code-templates/cli-tool/components/agents/data-ai/monday-bug-fixer.md': {
    line: 4,
    char: '*',
  },
  'davila7__claude-code-templates/cli-tool/components/agents/development-tools/launchdarkly-flag-cleanup.md':
    { line: 5, char: '*' },
  'rshah515__claude-code-subagents/orchestrators/prd-writer.md': { line: 3, char: '*' },
  'rshah515__claude-code-subagents/orchestrators/project-manager.md': { line: 3, char: '*' },
  'rshah515__claude-code-subagents/core/architect.md': { line: 3, char: '*' },
};

/** SOURCES.md group B files with frontmatter that strict mode rejects for its fences. */
const STRICT_FENCE_FAILURES: Record<string, number> = {
  '0xfurai__claude-code-subagents/agents/sqs-expert.md': 2, // whole file indented by 4 spaces
  'vijaythecoder__awesome-claude-agents/agents/universal/frontend-developer.md': 6, // 56-dash closing fence
};

const loaded = new Map<string, LoadResult>();

/** Each file is parsed once per mode; the first test does it and checks nothing throws. */
function load(file: (typeof files)[number], mode: 'strict' | 'lenient'): LoadResult {
  const key = `${mode}:${file.path}`;
  let result = loaded.get(key);
  if (!result) {
    result = parseDefinition(
      file.text,
      file.path,
      mode === 'lenient' ? { source: 'compat' } : { source: 'project' },
    );
    loaded.set(key, result);
  }
  return result;
}

function charAt(text: string, line: number, column: number): string | undefined {
  return text.replace(/^\uFEFF/, '').split(/\r?\n/)[line - 1]?.[column - 1];
}

describe(`agent-definitions corpus: ${files.length} files, ${withFrontmatter.length} with frontmatter`, () => {
  it('holds the files SOURCES.md describes', () => {
    expect(files.length).toBe(263);
    const appendixStrictFailures = readFileSync(join(corpusDir, 'SOURCES.md'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('| `') && line.includes('yaml(eemeli)_error'))
      .map((line) => line.split('`')[1]);
    expect(appendixStrictFailures.sort()).toEqual(Object.keys(STRICT_YAML_FAILURES).sort());
  });

  it('no file makes the loader throw, in either mode', () => {
    const thrown: string[] = [];
    for (const file of files) {
      for (const mode of ['strict', 'lenient'] as const) {
        try {
          load(file, mode);
        } catch (error) {
          thrown.push(`${file.name} (${mode}): ${String(error)}`);
        }
      }
    }
    expect(thrown).toEqual([]);
  });

  it(`lenient: all ${withFrontmatter.length} files with frontmatter load with name, description and body`, () => {
    const failures: string[] = [];
    let withWarnings = 0;
    for (const file of withFrontmatter) {
      const result = load(file, 'lenient');
      const definition = result.definition;
      if (!definition || definition.name === '' || definition.description === '' || definition.body === '') {
        failures.push(`${file.name}: ${result.errors.map((problem) => problem.message).join('; ')}`);
      }
      if (result.warnings.length > 0) withWarnings++;
    }
    console.info(
      `lenient: ${withFrontmatter.length - failures.length}/${withFrontmatter.length} loaded ` +
        `(${withWarnings} with warnings); ${withoutFrontmatter.length} files have no frontmatter`,
    );
    expect(failures).toEqual([]);
  });

  it(`lenient and strict: the ${withoutFrontmatter.length} README-style files give parse_error at their first line`, () => {
    expect(withoutFrontmatter.map((file) => file.name)).toEqual([
      'SuperClaude-Org__SuperClaude_Framework/src/superclaude/agents/README.md',
      'VoltAgent__awesome-claude-code-subagents/categories/01-core-development/README.md',
      'damilola-elegbede__claude-config/.claude/agents/README.md',
      'davila7__claude-code-templates/cli-tool/components/agents/business-marketing/cli-tool/components/agents/business-marketing/cli-tool/components/agents/business-marketing/vital-health-content-agent.md',
    ]);
    for (const file of withoutFrontmatter) {
      for (const mode of ['strict', 'lenient'] as const) {
        const result = load(file, mode);
        expect(result.definition).toBeUndefined();
        expect(result.errors).toMatchObject([{ code: 'parse_error', line: 1, column: 1, file: file.path }]);
      }
    }
  });

  it(`strict: the ${Object.keys(STRICT_YAML_FAILURES).length} known-bad YAML files give parse_error at the culprit`, () => {
    for (const [name, expected] of Object.entries(STRICT_YAML_FAILURES)) {
      const file = files.find((candidate) => candidate.name === name);
      if (!file) throw new Error(`missing corpus file ${name}`);
      const result = load(file, 'strict');
      const [first] = result.errors;
      expect(result.definition, name).toBeUndefined();
      expect(first, name).toMatchObject({ code: 'parse_error', line: expected.line });
      expect(charAt(file.text, first?.line ?? 0, first?.column ?? 0), name).toBe(expected.char);
      expect(
        result.errors.every((problem) => problem.code === 'parse_error'),
        name,
      ).toBe(true);
    }
  });

  it('strict: rejects exactly the known-bad YAML, the odd fences and the files without frontmatter', () => {
    const expected = new Set([
      ...Object.keys(STRICT_YAML_FAILURES),
      ...Object.keys(STRICT_FENCE_FAILURES),
      ...withoutFrontmatter.map((file) => file.name),
    ]);
    const parseFailures = files
      .filter((file) => load(file, 'strict').errors.some((problem) => problem.code === 'parse_error'))
      .map((file) => file.name);
    expect(parseFailures.sort()).toEqual([...expected].sort());
    for (const [name, line] of Object.entries(STRICT_FENCE_FAILURES)) {
      const file = files.find((candidate) => candidate.name === name);
      expect(file && load(file, 'strict').errors, name).toMatchObject([{ code: 'parse_error', line }]);
    }
  });

  it('lenient, with the tools troupe has: every problem about a value points at that value', () => {
    const knownTools = new Set([...BUILTIN_TOOL_NAMES, 'complete_task', ...ORCHESTRATION_TOOL_NAMES]);
    const misplaced: string[] = [];
    let located = 0;
    for (const file of withFrontmatter) {
      const result = parseDefinition(file.text, file.path, { source: 'compat', knownTools });
      const lines = file.text.replace(/^\uFEFF/, '').split(/\r?\n/);
      for (const problem of [...result.errors, ...result.warnings]) {
        const entry = /^\/(tools|disallowedTools)\/(\d+)$/.exec(problem.path);
        const definition = result.definition;
        const list = entry?.[1] === 'tools' ? definition?.tools : definition?.disallowedTools;
        const written =
          entry === null
            ? problem.path === '/model'
              ? definition?.model
              : undefined
            : list?.[Number(entry[2])];
        if (written === undefined) continue;
        located += 1;
        const at = (lines[problem.line - 1] ?? '').slice(problem.column - 1).replace(/^['"]/, '');
        if (!at.startsWith(written)) {
          misplaced.push(`${file.name}:${problem.line}:${problem.column} ${problem.code} ${problem.path}`);
        }
      }
    }
    expect(located).toBeGreaterThan(200);
    expect(misplaced).toEqual([]);
  });

  it('lenient: reads the Claude Code shapes the way Claude Code means them', () => {
    const byName = (name: string) => {
      const file = files.find((candidate) => candidate.name.endsWith(name));
      if (!file) throw new Error(`missing corpus file ${name}`);
      return load(file, 'lenient').definition;
    };
    expect(byName('data-ai/monday-bug-fixer.md')?.tools).toBeUndefined();
    expect(byName('arm-cortex-microcontrollers/agents/arm-cortex-expert.md')?.tools).toEqual([]);
    expect(byName('deep-research-team/research-synthesizer.md')?.description).toContain(
      '<example>Context: The research-orchestrator',
    );
    expect(byName('development-tools/unused-code-cleaner.md')?.body).not.toContain('\r');
    expect(byName('specialized/zk-steward.md')?.name).toBe('zk-steward');
    expect(byName('affaan-m__everything-claude-code/agents/architect.md')).toMatchObject({
      tools: ['Read', 'Grep', 'Glob'],
    });
    const template = byName('.claude/agents/agent-expert.md');
    expect(template?.name).toBe('agent-expert');
  });
});
