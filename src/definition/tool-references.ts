/**
 * Checks a definition's tool references against the tools that exist: every `tools` /
 * `disallowedTools` entry must name a tool (or it is an `unknown_tool` warning that names it), and
 * every key of `toolNameOverrides`, `paramNameOverrides` and `toolConfig` must name a registered
 * tool (`unknown_tool_override`, an error). `agents validate`, `agents show` and every spawn run
 * the same check; only the set of known tools differs (a spawn knows the MCP tools it connected to).
 */
import { ORCHESTRATION_TOOL_NAMES } from '../tools/builtin/orchestration.ts';
import { claudeCodeTool, MCP_PREFIX, mcpServerOf } from '../tools/names.ts';
import { type Rule, ruleNamesTool, specifierProblem, tryParseRule } from '../tools/rules.ts';
import { suggestion } from './fields.ts';
import { FILE_START, jsonPointer, type PathSegment } from './problems.ts';
import type { AgentDefinition, DefinitionProblem, ProblemCode, SourcePosition } from './types.ts';
import { isVsCodeToolSet, vsCodeReplacement } from './vscode-tools.ts';

/** What a definition's tool references are checked against. */
export interface KnownTools {
  /** Canonical names of the registered tools. */
  readonly names: Iterable<string>;
  /**
   * MCP servers whose tools were not listed (declared but not connected, as in `agents validate`):
   * any `mcp__<server>__...` name of theirs is accepted.
   */
  readonly unlistedMcpServers?: Iterable<string>;
  /** Servers `mcpServers: [name]` entries may refer to; when given, other names are warned about. */
  readonly configuredMcpServers?: Iterable<string>;
}

type Reference = Pick<
  AgentDefinition,
  | 'tools'
  | 'disallowedTools'
  | 'toolNameOverrides'
  | 'paramNameOverrides'
  | 'toolConfig'
  | 'path'
  | 'sourcePositions'
  | 'mcpServers'
>;

/** Every problem with the tool references of `def` (see the module comment). */
export function toolReferenceProblems(def: Reference, known: KnownTools): DefinitionProblem[] {
  const names = [...new Set(known.names)];
  // Added one by one, not map()ped: an optimized map() returns a holey array where the
  // interpreter's is packed, and this code (run for every agent a host starts) deopted on it.
  const unlisted = new Set<string>();
  for (const server of known.unlistedMcpServers ?? []) unlisted.add(lower(server));
  for (const server of def.mcpServers) if (typeof server !== 'string') unlisted.add(lower(server.name));
  const problems: DefinitionProblem[] = [];
  const add = (
    severity: DefinitionProblem['severity'],
    code: ProblemCode,
    message: string,
    path: readonly PathSegment[],
  ): void => {
    const at = positionOf(def, path);
    problems.push({ severity, code, message, file: def.path, ...at, path: jsonPointer(path) });
  };

  const entries: [key: 'tools' | 'disallowedTools', list: readonly string[]][] = [
    ['tools', def.tools ?? []],
    ['disallowedTools', def.disallowedTools],
  ];
  // `tools` entries that admit a tool, or may (an MCP server not connected yet).
  let admitting = 0;
  for (const [key, list] of entries) {
    const effect = key === 'tools' ? 'allow' : 'deny';
    list.forEach((entry, index) => {
      if (entry.trim() === '*') return;
      const path = [key, index];
      const parsed = tryParseRule(entry);
      if ('error' in parsed) {
        const consequence =
          effect === 'allow' ? 'it admits nothing' : 'the tool it names is removed entirely';
        add(
          'warning',
          'invalid_tool_rule',
          `${parsed.error.message.replace(/^Cannot/, 'Could not')}; ${consequence}`,
          path,
        );
        return;
      }
      const rule = parsed.rule;
      const modelNames = def.toolNameOverrides;
      const named = names.filter((name) => ruleNamesTool(rule, name, effect, { cwd: '/', modelNames }));
      if (named.length > 0) {
        const unusable = named.filter((name) => specifierProblem(rule, name) !== undefined);
        if (unusable.length === named.length && rule.specifier !== undefined) {
          const why = specifierProblem(rule, unusable[0] ?? '') ?? '';
          const consequence =
            effect === 'allow' ? 'it admits nothing' : `\`${unusable.join('`, `')}\` is removed entirely`;
          add('warning', 'invalid_tool_rule', `Cannot apply \`${rule.raw}\`: ${why}; ${consequence}`, path);
          return;
        }
        if (key === 'tools') admitting += 1;
        return;
      }
      const why = unknownReason(rule, names, unlisted);
      if (why !== undefined) add('warning', 'unknown_tool', `\`${rule.raw}\` in \`${key}\` ${why}`, path);
      else if (key === 'tools') admitting += 1;
    });
  }
  // Each entry's warning says what is wrong with it; this one says what it means for the agent.
  const listed = def.tools ?? [];
  if (listed.length > 0 && admitting === 0) {
    add(
      'warning',
      'no_tools',
      `${listed.length === 1 ? 'The only `tools` entry names no tool' : `None of the ${listed.length} \`tools\` entries names a tool`} troupe has here: the agent runs with no tools but \`complete_task\` and can only answer from its task; fix the entries (see the warning at each), remove \`tools\` for every tool, or write \`tools: []\` for none`,
      ['tools'],
    );
    // First: read before the entries' own warnings, which a run prints in order.
    const summary = problems.pop();
    if (summary) problems.unshift(summary);
  }

  const overrideKeys: [key: string, value: Readonly<Record<string, unknown>>][] = [
    ['toolNameOverrides', def.toolNameOverrides],
    ['paramNameOverrides', def.paramNameOverrides],
    ['toolConfig', def.toolConfig],
  ];
  const registered = new Set(names);
  for (const [key, object] of overrideKeys) {
    for (const tool of Object.keys(object)) {
      if (registered.has(tool)) continue;
      const server = mcpServerOf(tool);
      if (server !== undefined && unlisted.has(server.toLowerCase())) continue;
      add(
        'error',
        'unknown_tool_override',
        `Expected \`${key}\` to name registered tools, found \`${tool}\`${closest(tool, names)}`,
        [key, tool],
      );
    }
  }

  if (known.configuredMcpServers !== undefined) {
    const configured = new Set([...known.configuredMcpServers].map(lower));
    def.mcpServers.forEach((server, index) => {
      if (typeof server !== 'string' || configured.has(server.toLowerCase())) return;
      add(
        'warning',
        'unknown_mcp_server',
        `\`mcpServers\` names \`${server}\`, but no MCP server of that name is configured ` +
          "(in .mcp.json or the supervisor's mcpServers); its tools are not available",
        ['mcpServers', index],
      );
    });
  }
  return problems;
}

/**
 * Why an orchestration tool is missing: it is always registered under a Supervisor, so a run
 * without one (`troupe run`, `troupe chat`, `runAgent`) is the only place it can be.
 */
const NEEDS_SUPERVISOR =
  'is an orchestration tool, which needs a Supervisor: `troupe run` and `troupe chat` run one agent alone; use `troupe fanout` or the library (`Supervisor`); it is ignored here';

/** Why a rule that names no known tool is unknown, or undefined when nothing can be said against it. */
function unknownReason(
  rule: Rule,
  names: readonly string[],
  unlisted: ReadonlySet<string>,
): string | undefined {
  const claude = claudeCodeTool(rule.tool);
  if (claude && 'unsupported' in claude) {
    return `is a Claude Code tool troupe does not offer (${claude.unsupported}); it is ignored`;
  }
  if (claude && 'admits' in claude) {
    if (claude.admits.every((name) => ORCHESTRATION_TOOL_NAMES.has(name))) return NEEDS_SUPERVISOR;
    return `admits \`${claude.admits.join('`, `')}\`, which ${claude.admits.length > 1 ? 'are' : 'is'} not registered here`;
  }
  if (rule.tool.toLowerCase().startsWith(MCP_PREFIX)) {
    const server = mcpServerOf(rule.tool);
    if (server === undefined) return rule.tool.includes('*') ? undefined : 'names no MCP server';
    if (unlisted.has(server.toLowerCase())) return undefined;
    const connected = names.some((name) =>
      name.toLowerCase().startsWith(`${MCP_PREFIX}${server.toLowerCase()}__`),
    );
    return connected
      ? `matches no tool of MCP server \`${server}\`${closest(rule.tool, names)}`
      : `names MCP server \`${server}\`, which is not configured (in the definition's mcpServers, .mcp.json or the supervisor's mcpServers)`;
  }
  if (rule.tool.includes('/')) {
    const server = rule.tool.split('/')[0] ?? rule.tool;
    // `edit/editFiles` is a tool of VS Code's own, `publisher.extension/tool` an extension's: no
    // MCP server could bring either, so the MCP spelling is no advice for them.
    if (isVsCodeToolSet(server)) {
      const instead = vsCodeReplacement(rule.tool.slice(server.length + 1), server) ?? '';
      return `is a tool of VS Code's built-in tool set \`${server}\`, which troupe does not offer${instead}; it is ignored`;
    }
    if (server.includes('.')) {
      return `is a tool of the VS Code extension \`${server}\`, which troupe does not offer; it is ignored`;
    }
    return `matches no tool (\`server/tool\` is VS Code's syntax; an MCP server's tools are written \`mcp__${server}__*\`)`;
  }
  if (ORCHESTRATION_TOOL_NAMES.has(rule.tool.toLowerCase())) return NEEDS_SUPERVISOR;
  if (rule.tool.includes('*')) return 'matches no registered tool';
  // VS Code agent files list VS Code's tools (`codebase`, `runCommands`): say what troupe's are.
  const instead = vsCodeReplacement(rule.tool);
  if (instead !== undefined)
    return `is a VS Code (GitHub Copilot) tool troupe does not offer${instead}; it is ignored`;
  const server = mcpServerHint(rule, names, unlisted);
  if (server !== undefined) return server;
  return `matches no registered tool${closest(rule.tool, names)}; it is ignored`;
}

/**
 * Names of MCP servers as Claude Code and VS Code users commonly configure them, which agent files
 * in the wild write in `tools` as if they were tools (`tools: Read, github`).
 */
const COMMON_MCP_SERVERS: ReadonlySet<string> = new Set([
  'atlassian',
  'brave-search',
  'browserbase',
  'chrome-devtools',
  'context7',
  'exa',
  'figma',
  'filesystem',
  'firecrawl',
  'github',
  'gitlab',
  'jira',
  'linear',
  'memory',
  'notion',
  'playwright',
  'postgres',
  'puppeteer',
  'sentry',
  'sequential-thinking',
  'sequentialthinking',
  'serena',
  'slack',
  'sqlite',
  'supabase',
  'tavily',
  'terraform',
]);
/** A name that says it is an MCP server (`microsoft.docs.mcp`, `mcp-server-x`, `x-mcp`). */
const MCP_IN_NAME = /(?:^|[._-])mcp(?:$|[._-])/i;

/**
 * Why a bare name is no tool when it names an MCP server (`github`): one configured here, or one
 * whose name is a common server's or says `mcp`. An MCP tool is `mcp__<server>__<tool>`.
 */
function mcpServerHint(
  rule: Rule,
  names: readonly string[],
  unlisted: ReadonlySet<string>,
): string | undefined {
  if (rule.specifier !== undefined) return undefined;
  const name = rule.tool;
  const lowered = name.toLowerCase();
  const spelled = /^[A-Za-z0-9_-]+$/.test(name) ? name : '<server>';
  const write = `write \`${MCP_PREFIX}${spelled}__*\` for all of its tools or \`${MCP_PREFIX}${spelled}__<tool>\` for one`;
  const connected = names.some((tool) => tool.toLowerCase().startsWith(`${MCP_PREFIX}${lowered}__`));
  if (unlisted.has(lowered) || connected) {
    return `names the MCP server \`${name}\`, not a tool: ${write}; it is ignored`;
  }
  if (!COMMON_MCP_SERVERS.has(lowered) && !MCP_IN_NAME.test(name)) return undefined;
  return (
    `matches no registered tool: it looks like the name of an MCP server, not of a tool; ${write}, ` +
    "and configure the server in .mcp.json or the definition's `mcpServers` (troupe connects no other); it is ignored"
  );
}

/**
 * ` (did you mean \`x\`?)` for a name equal to a known one but for case and separators, or one
 * typo away from it (`read_fil` -> `read_file`; `suggestion`).
 */
function closest(name: string, names: readonly string[]): string {
  return suggestion(name, names);
}

/** Where the value at `path` was written, falling back to its parents, then the file start. */
export function positionOf(
  def: Pick<AgentDefinition, 'sourcePositions'>,
  path: readonly PathSegment[],
): SourcePosition {
  const positions = def.sourcePositions ?? {};
  for (let depth = path.length; depth > 0; depth -= 1) {
    const found = positions[jsonPointer(path.slice(0, depth))];
    if (found) return found;
  }
  return FILE_START;
}

function lower(text: string): string {
  return text.toLowerCase();
}
