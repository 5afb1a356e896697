/**
 * VS Code (GitHub Copilot) tool names, as VS Code agent files list them in `tools` (`codebase`,
 * `runCommands`, `edit/editFiles`), and the Claude Code names of troupe's tools that do their job.
 * troupe admits none of them: they are `unknown_tool` warnings, which say what to write instead.
 * The names are those of the real VS Code files in test/fixtures/corpus, VS Code's built-in tool
 * sets, and GitHub Copilot's aliases (`shell`, `custom-agent`).
 */
import { claudeCodeTool } from '../tools/names.ts';

/** What to write instead of a VS Code tool: Claude Code names troupe admits, and what for. */
interface Equivalent {
  /** Claude Code names (troupe admits them; see src/tools/names.ts); none when troupe has no such tool. */
  readonly use: readonly string[];
  /** What the replacement is used for, or another way to get the tool. */
  readonly how?: string;
}

const SEARCH: Equivalent = { use: ['Grep', 'Glob'] };
const SHELL: Equivalent = { use: ['Bash'] };
const NONE: Equivalent = { use: [] };

/** By lowercase name: tools, and the built-in tool sets that stand for all their tools. */
const VS_CODE_TOOLS: ReadonlyMap<string, Equivalent> = new Map([
  ['codebase', SEARCH],
  ['search', SEARCH],
  ['textsearch', { use: ['Grep'] }],
  ['searchresults', { use: ['Grep'] }],
  ['usages', { use: ['Grep'] }],
  ['filesearch', { use: ['Glob'] }],
  ['findtestfiles', { use: ['Glob'] }],
  ['listdirectory', { use: ['LS'] }],
  ['readfile', { use: ['Read'] }],
  ['editfiles', { use: ['Edit', 'Write'] }],
  ['createfile', { use: ['Write'] }],
  ['new', { use: ['Write'] }],
  ['runcommands', SHELL],
  ['runinterminal', SHELL],
  ['terminalcommand', SHELL],
  ['execute', SHELL],
  ['shell', SHELL],
  ['powershell', SHELL],
  ['runtasks', SHELL],
  ['terminallastcommand', { use: ['Bash'], how: "each call's result holds the command's output" }],
  ['terminalselection', { use: ['Bash'], how: "each call's result holds the command's output" }],
  ['getterminaloutput', { use: ['Bash'], how: "each call's result holds the command's output" }],
  ['runtests', { use: ['Bash'], how: 'to run the tests' }],
  ['testfailure', { use: ['Bash'], how: 'to run the tests' }],
  ['problems', { use: ['Bash'], how: 'to run the compiler or linter' }],
  ['changes', { use: ['Bash'], how: 'to run `git diff`' }],
  ['fetch', { use: ['WebFetch'] }],
  ['web', { use: ['WebFetch', 'WebSearch'] }],
  ['githubrepo', { use: ['WebFetch'], how: "or a GitHub MCP server's tools, `mcp__github__*`" }],
  ['todo', { use: ['TodoWrite'] }],
  ['todos', { use: ['TodoWrite'] }],
  ['runsubagent', { use: ['Task'], how: 'under a Supervisor' }],
  ['custom-agent', { use: ['Task'], how: 'under a Supervisor' }],
  ['agent', { use: ['Task'], how: 'under a Supervisor' }],
  ['edit', { use: ['Edit', 'Write'] }],
  ['read', { use: ['Read'] }],
  ['opensimplebrowser', NONE],
  ['vscodeapi', NONE],
  ['extensions', NONE],
  ['runnotebooks', NONE],
  ['vscode', NONE],
  ['activepullrequest', NONE],
  ['copilotcodingagent', NONE],
]);

/** VS Code's built-in tool sets, the `set` of its `set/tool` names (lowercase). */
const VS_CODE_TOOL_SETS: ReadonlySet<string> = new Set([
  'agent',
  'edit',
  'execute',
  'new',
  'read',
  'runcommands',
  'runnotebooks',
  'runtasks',
  'search',
  'todo',
  'vscode',
  'web',
]);

/** Whether `set` (of a `set/tool` name) is one of VS Code's built-in tool sets. */
export function isVsCodeToolSet(set: string): boolean {
  return VS_CODE_TOOL_SETS.has(set.toLowerCase());
}

/**
 * What troupe offers instead of VS Code tool `name` (`codebase`, or the `tool` of `set/tool`, else
 * its `set`), as the end of an `unknown_tool` message: `; write \`Grep\`, \`Glob\` instead
 * (troupe's \`grep\`, \`glob\`)`, `, and troupe has none like it`; undefined for a name VS Code does
 * not have.
 */
export function vsCodeReplacement(name: string, set?: string): string | undefined {
  const equivalent =
    VS_CODE_TOOLS.get(name.toLowerCase()) ??
    (set === undefined ? undefined : VS_CODE_TOOLS.get(set.toLowerCase()));
  if (equivalent === undefined) return undefined;
  if (equivalent.use.length === 0) return ', and troupe has none like it';
  const canonical = equivalent.use.flatMap((use) => {
    const tool = claudeCodeTool(use);
    return tool !== undefined && 'admits' in tool ? tool.admits : [];
  });
  const why = [`troupe's ${ticked([...new Set(canonical)])}`, ...(equivalent.how ? [equivalent.how] : [])];
  return `; write ${ticked(equivalent.use)} instead (${why.join(', ')})`;
}

function ticked(names: readonly string[]): string {
  return names.map((name) => `\`${name}\``).join(', ');
}
