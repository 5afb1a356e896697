/**
 * The permission gate: for one call of an admitted tool, whether it runs, waits for a person's
 * approval, or is denied. Admission (`tools`, `disallowedTools`, `plan`) is policy.ts's; this decides
 * the calls of tools an agent has, from `permissions: { allow, ask, deny }` rules (the definition's
 * and the supervisor's, plan's or command line's), the tool's own `needsApproval`, and the
 * permission mode, as Claude Code defines them (docs/permissions.md):
 *
 * 1. a `deny` rule matches: denied (in every mode);
 * 2. `bypassPermissions`: allowed;
 * 3. an `ask` rule matches, or the tool's `needsApproval` says so: asks (`dontAsk`: denied);
 * 4. an `allow` rule matches: allowed;
 * 5. the mode decides: reads and other tools run; edits, shell commands, web requests and MCP tools
 *    ask (`dontAsk`: denied), except that `acceptEdits` lets edits and common filesystem commands
 *    inside the working directory run.
 *
 * Rules are Claude Code's (rules.ts). In these lists a Claude Code file tool with a specifier
 * reaches every tool of its kind (`Edit(src/**)` covers `search_replace` and `write_file`); an `ask`
 * or `deny` command rule catches a command when any part of it matches, an `allow` one only when
 * every part does.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { PermissionMode, PermissionRules } from '../definition/types.ts';
import { extend } from '../objects.ts';
import { isInside } from './confine.ts';
import { claudeCodeTool, MCP_PREFIX, specifierKind } from './names.ts';
import {
  type CallArgs,
  commandAllowed,
  commandDenied,
  matchRule,
  pathMatches,
  type Rule,
  type RuleContext,
  ruleNamesTool,
  specifierProblem,
  tryParseRule,
} from './rules.ts';
import { hidesCommand, readCommandLine, runsGivenCode } from './shell-command.ts';
import type { Tool } from './types.ts';

/** Every permission mode, in the order docs/permissions.md lists them. */
export const PERMISSION_MODES: readonly PermissionMode[] = [
  'default',
  'acceptEdits',
  'dontAsk',
  'plan',
  'bypassPermissions',
];

/** What the gate says about one call. */
export type PermissionVerdict =
  | { readonly kind: 'allow'; readonly rule?: string }
  | {
      readonly kind: 'ask' | 'deny';
      /** The rule that asked or denied: as written, or the tool's name for a mode or `needsApproval`. */
      readonly rule: string;
      /** Why, in words (shown to people, and to the model for a denial). */
      readonly reason: string;
    };

/**
 * Permissions given to an agent besides its definition's: by the supervisor, a plan or the command
 * line. Rules add to the definition's; `mode` replaces a definition's `default` mode.
 */
export interface AgentPermissions {
  /** Replaces the mode of definitions whose `permissionMode` is `default`. @default the definition's */
  readonly mode?: PermissionMode;
  readonly allow?: readonly string[];
  readonly ask?: readonly string[];
  readonly deny?: readonly string[];
  /** `bypassPermissions` may run; without it an agent in that mode fails with `bypass_not_allowed`. @default false */
  readonly allowBypass?: boolean;
  /** How long a call waits for a decision; 0 = no limit. @default DEFAULT_APPROVAL_TIMEOUT_MS (10 minutes) */
  readonly approvalTimeoutMs?: number;
  /** What a timeout decides. @default 'deny' */
  readonly onTimeout?: 'deny' | 'allow';
}

/** A source of rules and how messages name it. */
export interface RuleSource {
  /** `permissions` (the definition's) or `supervisor permissions`. */
  readonly label: string;
  readonly rules: Partial<PermissionRules>;
}

/** Decides the calls of one agent. */
export interface PermissionGate {
  readonly mode: PermissionMode;
  /** The verdict on one call (arguments validated, canonical parameter names). */
  check(tool: Tool, args: CallArgs, agentId: string): Promise<PermissionVerdict>;
}

/** The mode an agent runs in: the definition's, or the override when the definition says `default`. */
export function effectiveMode(definitionMode: PermissionMode, override?: PermissionMode): PermissionMode {
  return definitionMode === 'default' && override !== undefined ? override : definitionMode;
}

/** What kind of action a tool is, for the modes. */
export type ToolKind = 'edit' | 'shell' | 'web' | 'mcp' | 'other';

const KINDS: Readonly<Record<string, ToolKind>> = {
  search_replace: 'edit',
  write_file: 'edit',
  run_terminal_cmd: 'shell',
  web_fetch: 'web',
  web_search: 'web',
};

/** The kind of a canonical tool: the modes ask before `edit`, `shell`, `web` and `mcp` tools. */
export function toolKind(canonical: string): ToolKind {
  if (Object.hasOwn(KINDS, canonical)) return KINDS[canonical] ?? 'other';
  return canonical.toLowerCase().startsWith(MCP_PREFIX) ? 'mcp' : 'other';
}

const KIND_WORDS: Readonly<Record<Exclude<ToolKind, 'other'>, string>> = {
  edit: 'file edits',
  shell: 'shell commands',
  web: 'web requests',
  mcp: 'MCP tools',
};

/**
 * Directories `acceptEdits` never edits without asking, even inside the working directory: version
 * control and agent configuration, as in Claude Code.
 */
export const PROTECTED_DIRS: readonly string[] = ['.git', '.claude', '.troupe'];

/** Shell commands `acceptEdits` runs without asking when every path they name is inside the working directory. */
export const ACCEPT_EDITS_COMMANDS: ReadonlySet<string> = new Set([
  'mkdir',
  'touch',
  'mv',
  'cp',
  'rm',
  'rmdir',
]);

/** Commands whose targets may not be the working directory itself. */
const REMOVING = new Set(['mv', 'rm', 'rmdir']);

interface SourcedRule {
  readonly rule: Rule;
  readonly where: string;
}

/** Builds the gate of one agent. Rules that cannot be read deny (or ask for) the whole tool they name. */
export function buildPermissionGate(options: {
  readonly mode: PermissionMode;
  readonly sources: readonly RuleSource[];
  readonly context: RuleContext;
}): PermissionGate {
  const { mode } = options;
  const ctx = options.context;
  const lists = { allow: [] as SourcedRule[], ask: [] as SourcedRule[], deny: [] as SourcedRule[] };
  for (const source of options.sources) {
    for (const list of ['allow', 'ask', 'deny'] as const) {
      for (const text of source.rules[list] ?? []) {
        const parsed = tryParseRule(text);
        const where = `${source.label}.${list}`;
        if ('rule' in parsed) lists[list].push({ rule: parsed.rule, where });
        else if (list !== 'allow') {
          // Unreadable: it catches every call of the tool it seems to name, never none.
          const tool = text.trim().split('(')[0]?.trim() ?? '';
          if (tool !== '')
            lists[list].push({
              rule: { raw: text.trim(), tool, specifier: undefined, location: undefined },
              where,
            });
        }
      }
    }
  }
  let realCtx: Promise<RuleContext> | undefined;
  const real = (): Promise<RuleContext> => {
    realCtx ??= (async () =>
      extend(
        ctx,
        { cwd: (await realPathOf(ctx.cwd)) ?? ctx.cwd },
        ctx.projectRoot === undefined
          ? {}
          : { projectRoot: (await realPathOf(ctx.projectRoot)) ?? ctx.projectRoot },
      ))();
    return realCtx;
  };
  const matching = async (
    list: readonly SourcedRule[],
    canonical: string,
    args: CallArgs,
    effect: 'allow' | 'deny',
  ): Promise<SourcedRule | undefined> => {
    for (const entry of list) {
      if (await callMatches(entry.rule, canonical, args, effect, ctx, real)) return entry;
    }
    return undefined;
  };
  const asking = (rule: string, reason: string): PermissionVerdict =>
    mode === 'dontAsk'
      ? { kind: 'deny', rule, reason: `permissionMode dontAsk denies calls that would ask (${reason})` }
      : { kind: 'ask', rule, reason };

  return {
    mode,
    // Every tool call passes here: an empty list or a tool without `needsApproval` is not awaited
    // (each await suspended the check and allocated its promises, ~3 KB per call all told).
    async check(tool, args, agentId) {
      const name = tool.name;
      const denied = lists.deny.length === 0 ? undefined : await matching(lists.deny, name, args, 'deny');
      if (denied) {
        return {
          kind: 'deny',
          rule: denied.rule.raw,
          reason: `it matches \`${denied.rule.raw}\` in ${denied.where}`,
        };
      }
      if (mode === 'bypassPermissions') return { kind: 'allow', rule: 'bypassPermissions' };
      const asked = lists.ask.length === 0 ? undefined : await matching(lists.ask, name, args, 'deny');
      if (asked) return asking(asked.rule.raw, `it matches \`${asked.rule.raw}\` in ${asked.where}`);
      const needs = tool.needsApproval;
      if (
        needs !== undefined &&
        needs !== false &&
        (await needsApproval(tool, args, { agentId, cwd: ctx.cwd }))
      ) {
        return asking(name, `\`${name}\` asks for approval before it runs (needsApproval)`);
      }
      const allowed =
        specifierKind(name) === 'command'
          ? commandAllowedBy(lists.allow, name, typeof args.command === 'string' ? args.command : '', ctx)
          : lists.allow.length === 0
            ? undefined
            : (await matching(lists.allow, name, args, 'allow'))?.rule.raw;
      if (allowed !== undefined) return { kind: 'allow', rule: allowed };
      const kind = toolKind(name);
      if (kind === 'other') return { kind: 'allow' };
      if (mode === 'acceptEdits') {
        const why = await acceptEditsRefusal(kind, args, ctx, real);
        if (why === undefined) return { kind: 'allow', rule: 'acceptEdits' };
        return asking(name, `permissionMode acceptEdits asks before ${why}`);
      }
      // dontAsk denies what the other modes ask about: said as such, not as "dontAsk asks".
      if (mode === 'dontAsk') {
        return {
          kind: 'deny',
          rule: name,
          reason: `permissionMode dontAsk denies ${KIND_WORDS[kind]} that no allow rule admits`,
        };
      }
      return asking(
        kind === 'shell' ? shellAskRule(name, typeof args.command === 'string' ? args.command : '') : name,
        `permissionMode ${mode} asks before ${KIND_WORDS[kind]}`,
      );
    },
  };
}

/**
 * The allow rules that admit `command` together (each simple command of it matching one of them),
 * joined for messages; undefined when they do not.
 */
function commandAllowedBy(
  list: readonly SourcedRule[],
  canonical: string,
  command: string,
  ctx: RuleContext,
): string | undefined {
  const naming = list.filter((entry) => namesTool(entry.rule, canonical, ctx)).map((entry) => entry.rule);
  const bare = naming.find((rule) => rule.specifier === undefined);
  if (bare) return bare.raw;
  if (naming.length === 0 || !commandAllowed(naming, command)) return undefined;
  const used = naming.filter((rule) =>
    readCommandLine(command).commands.some((part) => commandAllowed([rule], part)),
  );
  return used.map((rule) => rule.raw).join(', ');
}

/** The tool's own `needsApproval`; one that throws asks. */
async function needsApproval(
  tool: Tool,
  args: CallArgs,
  context: { agentId: string; cwd: string },
): Promise<boolean> {
  const needs = tool.needsApproval;
  if (needs === undefined || needs === false) return false;
  if (needs === true) return true;
  try {
    return (await needs(args as Record<string, unknown>, context)) === true;
  } catch {
    return true;
  }
}

/**
 * Whether `rule` matches one call. A Claude Code file tool with a specifier reaches every tool of its
 * kind, and bare `Edit` covers `write_file` too. `effect: 'deny'` (ask and deny lists): a command
 * matches when any part does, a path when its lexical or its real form (links resolved as far as the
 * path exists) does, and a specifier that
 * cannot be checked matches every call; `allow`: every part, both forms, never an unchecked one.
 */
async function callMatches(
  rule: Rule,
  canonical: string,
  args: CallArgs,
  effect: 'allow' | 'deny',
  ctx: RuleContext,
  real: () => Promise<RuleContext>,
): Promise<boolean> {
  if (!namesTool(rule, canonical, ctx)) return false;
  if (rule.specifier === undefined) return true;
  if (specifierProblem(rule, canonical) !== undefined) return effect === 'deny';
  const kind = specifierKind(canonical);
  const text = (value: unknown): string => (typeof value === 'string' ? value : '');
  if (kind === 'command') {
    return effect === 'allow'
      ? commandAllowed([rule], text(args.command))
      : commandDenied(rule, text(args.command));
  }
  if (kind === 'read-path' || kind === 'edit-path') {
    const target = path.resolve(ctx.cwd, text(args.path) || '.');
    const lexical = pathMatches(rule.specifier, target, ctx);
    // A file not created yet is placed by its nearest existing ancestor: `link/new.txt` where `link`
    // leads into a denied directory is in that directory.
    const resolved = await nearestRealPath(target);
    const realMatch = pathMatches(rule.specifier, resolved, await real());
    return effect === 'deny' ? lexical || realMatch : lexical && realMatch;
  }
  return matchRule(rule, canonical, args, ctx, 'deny');
}

function namesTool(rule: Rule, canonical: string, ctx: RuleContext): boolean {
  if (ruleNamesTool(rule, canonical, 'deny', ctx)) return true;
  const claude = claudeCodeTool(rule.tool);
  return claude !== undefined && 'admits' in claude && (claude.denyScope ?? []).includes(canonical);
}

/** Why `acceptEdits` does not let this call run without asking, or undefined when it does. */
async function acceptEditsRefusal(
  kind: ToolKind,
  args: CallArgs,
  ctx: RuleContext,
  real: () => Promise<RuleContext>,
): Promise<string | undefined> {
  if (kind === 'edit') {
    const target = typeof args.path === 'string' ? args.path : '';
    return pathRefusal(target, false, ctx, real);
  }
  if (kind === 'other') return undefined;
  if (kind !== 'shell') return KIND_WORDS[kind];
  const command = typeof args.command === 'string' ? args.command : '';
  const line = readCommandLine(command);
  if (
    line.unterminated ||
    line.substituted.length > 0 ||
    line.fileRedirections.length > 0 ||
    line.commands.length === 0
  ) {
    return 'shell commands other than simple filesystem commands';
  }
  for (const simple of line.commands) {
    const words = plainWords(simple);
    const [name, ...rest] = words ?? [];
    if (words === undefined || name === undefined || !ACCEPT_EDITS_COMMANDS.has(name)) {
      return `shell commands other than ${[...ACCEPT_EDITS_COMMANDS].join(', ')} inside the working directory`;
    }
    for (const word of rest) {
      if (word.startsWith('-')) continue;
      const why = await pathRefusal(word, REMOVING.has(name), ctx, real);
      if (why !== undefined) return why;
    }
  }
  return undefined;
}

/** Why an edit of `target` is not inside the working directory (or is protected), or undefined. */
async function pathRefusal(
  target: string,
  belowOnly: boolean,
  ctx: RuleContext,
  real: () => Promise<RuleContext>,
): Promise<string | undefined> {
  if (target === '' || /[$`~\\<>]/.test(target)) return 'edits it cannot place inside the working directory';
  const absolute = path.resolve(ctx.cwd, target);
  const outside = 'edits outside the working directory';
  if (!isInside(ctx.cwd, absolute)) return outside;
  const relative = path.relative(ctx.cwd, absolute);
  if (belowOnly && relative === '') return 'removing or moving the working directory itself';
  const first = relative.split(path.sep)[0] ?? '';
  if (PROTECTED_DIRS.includes(first)) return `edits in protected directories (${PROTECTED_DIRS.join(', ')})`;
  // A symlink inside the working directory may lead out of it: its nearest existing ancestor decides.
  const realCwd = (await real()).cwd;
  const resolved = await nearestRealPath(absolute);
  if (!isInside(realCwd, resolved)) return outside;
  return undefined;
}

/** Programs whose second word names what they do (`git status`, `npm test`): a prefix keeps it. */
const SUBCOMMAND_PROGRAMS = new Set([
  'git',
  'npm',
  'pnpm',
  'yarn',
  'bun',
  'cargo',
  'go',
  'docker',
  'podman',
  'kubectl',
  'helm',
  'gh',
  'pip',
  'pip3',
  'uv',
  'poetry',
  'dotnet',
  'mvn',
  'gradle',
  'brew',
  'apt',
  'apt-get',
]);

/** Subcommands that run what they are given (`npm exec`, `docker run`, `uv run`). */
const RUNNING_SUBCOMMANDS = new Set(['exec', 'x', 'dlx', 'run', 'run-script']);

/** Package managers whose `run SCRIPT` runs a script of the project's package.json. */
const SCRIPT_RUNNERS = new Set(['npm', 'pnpm', 'yarn', 'bun']);

/**
 * The rule a mode's ask about a shell command is asked and remembered under (the `a` key,
 * `remember: 'session'`): the command's prefix (`run_terminal_cmd(npm test:*)`) when the line is
 * one simple command of plain words whose program runs nothing handed to it, else the whole line
 * (`run_terminal_cmd(echo a && rm b)`). Never the bare tool: approving one `echo` for the session
 * would approve every later command, `rm -rf` included.
 */
export function shellAskRule(canonical: string, command: string): string {
  const exact = `${canonical}(${command.trim()})`;
  const line = readCommandLine(command);
  const [simple, ...others] = line.commands;
  if (
    simple === undefined ||
    others.length > 0 ||
    line.unterminated ||
    line.substituted.length > 0 ||
    line.fileRedirections.length > 0 ||
    hidesCommand(simple)
  ) {
    return exact;
  }
  const [program = '', second, third] = plainWords(simple) ?? [];
  const plain = (word: string | undefined): word is string =>
    word !== undefined && /^[A-Za-z0-9][A-Za-z0-9._+:@-]*$/.test(word);
  if (!/^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(program) || runsGivenCode(program)) return exact;
  if (!SUBCOMMAND_PROGRAMS.has(program)) return `${canonical}(${program}:*)`;
  if (!plain(second)) return exact;
  if (!RUNNING_SUBCOMMANDS.has(second)) return `${canonical}(${program} ${second}:*)`;
  if ((second === 'run' || second === 'run-script') && SCRIPT_RUNNERS.has(program) && plain(third)) {
    return `${canonical}(${program} ${second} ${third}:*)`;
  }
  return exact;
}

/**
 * The words of a simple command, quotes removed; undefined when it holds anything but plain words,
 * `'single'` and `"double"` quoted text (no escapes, no expansions).
 */
function plainWords(command: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < command.length; i += 1) {
    const char = command[i] ?? '';
    if (char === ' ') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === "'" || char === '"') {
      const end = command.indexOf(char, i + 1);
      const inner = end === -1 ? undefined : command.slice(i + 1, end);
      if (inner === undefined || (char === '"' && /[$`\\]/.test(inner))) return undefined;
      word = (word ?? '') + inner;
      i = end;
    } else if (char === '\\') {
      return undefined;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

async function nearestRealPath(absolute: string): Promise<string> {
  let current = absolute;
  const rest: string[] = [];
  for (;;) {
    const resolved = await realPathOf(current);
    if (resolved !== undefined) return path.join(resolved, ...rest.reverse());
    const parent = path.dirname(current);
    if (parent === current) return absolute;
    rest.push(path.basename(current));
    current = parent;
  }
}

async function realPathOf(file: string): Promise<string | undefined> {
  try {
    return await realpath(file);
  } catch {
    return undefined;
  }
}

/** How a denial reads to the model: what decided it and why, and not to retry it unchanged. */
export function denialText(
  modelName: string,
  decision: { readonly by: string; readonly reason?: string | undefined },
): string {
  const why = decision.reason?.trim();
  const what =
    decision.by === 'person'
      ? `was denied by a person${why ? `: ${why}` : ''}`
      : decision.by === 'timeout'
        ? `was denied: nobody approved it in time${why ? ` (${why})` : ''}`
        : decision.by === 'unattended'
          ? `was denied: it needs a person's approval and nobody is there to give it${why ? ` (${why})` : ''}`
          : `was denied${why ? `: ${why}` : ''}`;
  return `\`${modelName}\` ${what}. It did not run. Do not retry it as is.`;
}

/**
 * The first of `rules` that allows a call of `tool` with `args` (canonical names), with `allow`
 * semantics (every part of a command must match); undefined when none does. For rules that answer
 * requests for a person (`--approve`).
 */
export async function allowingRule(
  rules: readonly string[],
  tool: string,
  args: CallArgs,
  context: RuleContext,
): Promise<string | undefined> {
  if (rules.length === 0) return undefined;
  const gate = buildPermissionGate({
    mode: 'dontAsk',
    sources: [{ label: '--approve', rules: { allow: rules } }],
    context,
  });
  const stand: Tool = {
    name: tool,
    description: '',
    parameters: {},
    readOnly: false,
    execute: () => ({ ok: false, text: '' }),
  };
  const verdict = await gate.check(stand, args, '');
  return verdict.kind === 'allow' ? verdict.rule : undefined;
}
