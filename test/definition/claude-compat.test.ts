/**
 * Real Claude Code files (copied byte for byte from the corpus into test/fixtures/corpus, see its
 * SOURCES.md) run as their authors meant: model aliases resolve per provider, and every name in
 * `tools` reaches a tool or gets a warning that names it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { knownTools } from '../../src/cli/agents.ts';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { resolveModel } from '../../src/providers/models.ts';
import { ORCHESTRATION_TOOLS } from '../../src/supervisor/orchestration.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { declareCompleteTask, declareWaitForInstruction } from '../../src/tools/builtin/orchestration.ts';
import { parseRule, ruleNamesTool } from '../../src/tools/rules.ts';
import { buildToolbox } from '../../src/tools/toolbox.ts';

const corpus = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/corpus/agent-definitions',
);

const FILES = {
  sonnet:
    'davila7__claude-code-templates/cli-tool/components/agents/ai-specialists/hackathon-ai-strategist.md',
  opus: 'wshobson__agents/plugins/python-development/agents/django-pro.md',
  haiku: 'davila7__claude-code-templates/cli-tool/components/agents/ai-specialists/llms-maintainer.md',
  inherit: 'davila7__claude-code-templates/cli-tool/components/agents/deep-research-team/nia-oracle.md',
  displayName:
    'davila7__claude-code-templates/cli-tool/components/agents/expert-advisors/custom-agent-foundry.md',
  task: 'rshah515__claude-code-subagents/orchestrators/project-manager.md',
  mcp: 'rshah515__claude-code-subagents/database/elasticsearch-expert.md',
  mcpWildcard: 'davila7__claude-code-templates/cli-tool/components/agents/finance/bettoredge-value-finder.md',
  taskTools: 'wshobson__agents/plugins/agent-teams/agents/team-debugger.md',
  teams: 'wshobson__agents/plugins/agent-teams/agents/team-lead.md',
  architect: 'rshah515__claude-code-subagents/core/architect.md',
  web: 'msitarzewski__agency-agents/paid-media/paid-media-auditor.md',
  vscodeTools: 'davila7__claude-code-templates/cli-tool/components/agents/expert-advisors/pimcore-expert.md',
  vscodeExtension:
    'davila7__claude-code-templates/cli-tool/components/agents/devops-infrastructure/azure-iac-exporter.md',
  vscodeSearch: 'davila7__claude-code-templates/cli-tool/components/agents/expert-advisors/gilfoyle.md',
  copilotAliases:
    'davila7__claude-code-templates/cli-tool/components/agents/programming-languages/technical-content-evaluator.md',
} as const;

const known = await knownTools(corpus);

function load(file: string) {
  const absolute = path.join(corpus, file);
  const result = parseDefinition(readFileSync(absolute, 'utf8'), absolute, {
    source: 'compat',
    knownTools: known,
  });
  if (!result.definition) throw new Error(`${file}: ${JSON.stringify(result.errors)}`);
  return { definition: result.definition, warnings: result.warnings };
}

const model = (definition: AgentDefinition, kind: 'anthropic' | 'openai', parentModel?: string) =>
  resolveModel({ kind, definitionModel: definition.model, ...(parentModel ? { parentModel } : {}) }).id;

describe('model aliases of real files', () => {
  it('resolves sonnet, opus and haiku to model ids per provider', () => {
    expect(model(load(FILES.sonnet).definition, 'anthropic')).toBe('claude-sonnet-4-6');
    expect(model(load(FILES.sonnet).definition, 'openai')).toBe('gpt-5');
    expect(model(load(FILES.opus).definition, 'anthropic')).toBe('claude-opus-4-7');
    expect(model(load(FILES.opus).definition, 'openai')).toBe('gpt-5');
    expect(model(load(FILES.haiku).definition, 'anthropic')).toBe('claude-haiku-4-5');
    expect(model(load(FILES.haiku).definition, 'openai')).toBe('gpt-5-mini');
  });

  it('takes the parent model for inherit, else the provider default, and reads display names', () => {
    const inherit = load(FILES.inherit).definition;
    expect(model(inherit, 'anthropic', 'claude-opus-4-7')).toBe('claude-opus-4-7');
    expect(model(inherit, 'openai')).toBe('gpt-4.1-mini');
    expect(model(load(FILES.displayName).definition, 'anthropic')).toBe('claude-sonnet-4-5');
  });
});

describe('tool names of real files', () => {
  const registry = createToolRegistry([
    declareCompleteTask(),
    declareWaitForInstruction(),
    ...ORCHESTRATION_TOOLS.map((tool) => ({ ...tool, execute: () => ({ ok: true, text: '' }) })),
  ]);

  for (const [label, file] of Object.entries(FILES)) {
    it(`admits or warns about every entry of \`tools\` (${label})`, () => {
      const { definition, warnings } = load(file);
      const toolbox = buildToolbox(definition, registry, { cwd: corpus, agentId: 'a' });
      const admitted = [...toolbox.admitted.keys()];
      (definition.tools ?? []).forEach((entry, index) => {
        const reaches = admitted.some((tool) => ruleNamesTool(parseRule(entry), tool, 'allow'));
        const warned = warnings.some(
          (warning) => warning.path === `/tools/${index}` && warning.message.includes(entry),
        );
        expect(reaches || warned, `${entry}: admitted ${reaches}, warned ${warned}`).toBe(true);
        expect(reaches && warned, `${entry} is both admitted and warned about`).toBe(false);
      });
    });
  }

  it('maps the Claude Code names to real tools', () => {
    const names = (file: string) =>
      [
        ...buildToolbox(load(file).definition, registry, { cwd: corpus, agentId: 'a' }).admitted.keys(),
      ].sort();
    expect(names(FILES.architect)).toEqual(
      [
        'await_agents',
        'glob',
        'grep',
        'list_dir',
        'read_file',
        'search_replace',
        'spawn_agent',
        'todo_write',
        'web_fetch',
        'web_search',
        'write_file',
      ].sort(),
    );
    expect(names(FILES.teams)).toEqual(
      [
        'await_agents',
        'glob',
        'grep',
        'read_file',
        'run_terminal_cmd',
        'send_instruction',
        'spawn_agent',
        'todo_write',
      ].sort(),
    );
  });

  it('says why the tools troupe does not have are missing', () => {
    const byEntry = (file: string) => load(file).warnings.map((warning) => warning.message);
    expect(byEntry(FILES.teams).join('\n')).toMatch(
      /`TeamCreate` in `tools` is a Claude Code tool troupe does not offer/,
    );
    expect(byEntry(FILES.mcp).join('\n')).toMatch(
      /`mcp__context7__resolve-library-id` in `tools` names MCP server `context7`, which is not configured/,
    );
    expect(byEntry(FILES.displayName).join('\n')).toMatch(
      /`github\/\*` in `tools` matches no tool \(`server\/tool` is VS Code's syntax/,
    );
    // Not an MCP server: VS Code's own tools and an extension's, which no `mcp__` name could bring.
    expect(byEntry(FILES.vscodeTools)).toContain(
      "`edit/editFiles` in `tools` is a tool of VS Code's built-in tool set `edit`, which troupe does not offer; write `Edit`, `Write` instead (troupe's `search_replace`, `write_file`); it is ignored",
    );
    expect(byEntry(FILES.vscodeExtension).join('\n')).toContain(
      '`ms-azuretools.vscode-azure-github-copilot/azure_query_azure_resource_graph` in `tools` is a tool of the VS Code extension `ms-azuretools.vscode-azure-github-copilot`, which troupe does not offer',
    );
  });

  it("names troupe's tool for a VS Code tool, and says when there is none", () => {
    const said = (file: string) =>
      Object.fromEntries(
        load(file)
          .warnings.filter((warning) => warning.code === 'unknown_tool')
          .map((warning) => {
            const [, entry = '', why = ''] = /^`([^`]*)` in `tools` (.*)$/.exec(warning.message) ?? [];
            return [entry, why];
          }),
      );
    const VS_CODE = 'is a VS Code (GitHub Copilot) tool troupe does not offer';
    // Before: every one of these said only "matches no registered tool; it is ignored".
    expect(said(FILES.vscodeTools)).toMatchObject({
      codebase: `${VS_CODE}; write \`Grep\`, \`Glob\` instead (troupe's \`grep\`, \`glob\`); it is ignored`,
      terminalCommand: `${VS_CODE}; write \`Bash\` instead (troupe's \`run_terminal_cmd\`); it is ignored`,
      fetch: `${VS_CODE}; write \`WebFetch\` instead (troupe's \`web_fetch\`); it is ignored`,
      githubRepo: `${VS_CODE}; write \`WebFetch\` instead (troupe's \`web_fetch\`, or a GitHub MCP server's tools, \`mcp__github__*\`); it is ignored`,
      runTests: `${VS_CODE}; write \`Bash\` instead (troupe's \`run_terminal_cmd\`, to run the tests); it is ignored`,
      problems: `${VS_CODE}; write \`Bash\` instead (troupe's \`run_terminal_cmd\`, to run the compiler or linter); it is ignored`,
    });
    expect(said(FILES.vscodeSearch)).toMatchObject({
      search: expect.stringContaining("write `Grep`, `Glob` instead (troupe's `grep`, `glob`)"),
      usages: expect.stringContaining("write `Grep` instead (troupe's `grep`)"),
      changes: expect.stringContaining(
        "write `Bash` instead (troupe's `run_terminal_cmd`, to run `git diff`)",
      ),
      openSimpleBrowser: `${VS_CODE}, and troupe has none like it; it is ignored`,
    });
    expect(said(FILES.copilotAliases)).toMatchObject({
      shell: expect.stringContaining("write `Bash` instead (troupe's `run_terminal_cmd`)"),
      todos: expect.stringContaining("write `TodoWrite` instead (troupe's `todo_write`)"),
      runSubagent: expect.stringContaining(
        "write `Task` instead (troupe's `spawn_agent`, `await_agents`, under a Supervisor)",
      ),
    });
  });
});
