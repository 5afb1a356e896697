/**
 * Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`, as written in a
 * definition's `tools` / `disallowedTools` (and, later, in allow/ask/deny approval lists).
 *
 * - `Bash`, `Bash(*)`: every call of the tool. Tool names match case-insensitively, by canonical
 *   name (`run_terminal_cmd`), model-facing name (a `toolNameOverrides` value) or Claude Code name.
 * - `Bash(npm test)` exactly that command; `Bash(git diff:*)` / `Bash(git diff *)` the command with
 *   any arguments; `*` anywhere for any text (`Bash(git * main)`). Compound commands are checked
 *   per simple command (see shell-command.ts).
 * - `Read(./docs/**)`, `Edit(src/**\/*.ts)`: gitignore-style paths. `//abs` from the filesystem root,
 *   `~/p` from the home directory, `/p` from the project root, `./p` or `p` from the working
 *   directory; a pattern without a slash matches at any depth.
 * - `WebFetch(domain:example.com)` (`domain:*.example.com` for subdomains).
 * - `Task(reviewer)` / `Agent(reviewer)`: spawning that definition.
 * - `mcp__github`, `mcp__github__*`: every tool of an MCP server; `mcp__github__create_issue` one.
 *
 * {@link parseRule} reads a rule once; {@link ruleNamesTool} and {@link matchRule} answer whether it
 * applies to a tool and to one call of it.
 */
import os from 'node:os';
import path from 'node:path';
import type picomatchFunction from 'picomatch';
import { UserError } from '../errors.ts';
import { lazyPackage } from '../require-package.ts';
import { claudeCodeTool, MCP_PREFIX, type SpecifierKind, specifierKind } from './names.ts';
import {
  commandMatchesPattern,
  denyForms,
  denyVariants,
  hidesCommand,
  readCommandLine,
} from './shell-command.ts';

// Loaded by the first path rule checked (src/require-package.ts).
const picomatch = lazyPackage<typeof picomatchFunction>('picomatch');

/** Where a rule was written, for messages. */
export interface RuleLocation {
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
}

/** A parsed rule. */
export interface Rule {
  /** The rule as written (trimmed). */
  readonly raw: string;
  /** The tool part: `Bash`, `read_file`, `mcp__github__*`, `*`. */
  readonly tool: string;
  /** The text in parentheses; undefined for a bare tool name and for `Tool(*)`. */
  readonly specifier: string | undefined;
  readonly location: RuleLocation | undefined;
}

/** Whether the rule grants (allow list: `tools`) or takes away (deny list: `disallowedTools`). */
export type RuleEffect = 'allow' | 'deny';

/** What matching needs besides the call. */
export interface RuleContext {
  /** The agent's working directory (absolute). */
  readonly cwd: string;
  /** Where `/path` patterns start. @default cwd */
  readonly projectRoot?: string;
  /** Where `~/path` patterns start. @default os.homedir() */
  readonly home?: string;
  /** Model-facing names of canonical tools (`toolNameOverrides`), which rules may use too. */
  readonly modelNames?: Readonly<Record<string, string>>;
}

const RULE_SYNTAX = /^([^()\s]+)(?:\((.*)\))?$/s;
const TOOL_PART = /^[A-Za-z0-9_*.\-/]+$/;

/**
 * Parses one rule. Throws UserError `invalid_rule` (fields `rule`, and `file`/`line`/`column` when
 * `location` gives them) for text that is not `Tool` or `Tool(specifier)`, or an empty specifier.
 */
export function parseRule(text: string, location?: RuleLocation): Rule {
  const raw = text.trim();
  const fail = (why: string): never => {
    const where =
      location?.file === undefined ? '' : `${location.file}:${location.line ?? 1}:${location.column ?? 1}: `;
    throw new UserError('invalid_rule', `${where}Cannot read the tool rule \`${raw}\`: ${why}`, {
      rule: raw,
      ...(location ?? {}),
    });
  };
  if (raw === '') fail('it is empty');
  const match = RULE_SYNTAX.exec(raw);
  if (!match) {
    if (raw.includes('(') && !raw.endsWith(')')) fail('expected `Tool(specifier)` with a closing `)`');
    fail('expected `Tool` or `Tool(specifier)`');
  }
  const tool = match?.[1] ?? '';
  if (!TOOL_PART.test(tool)) fail(`\`${tool}\` is not a tool name`);
  const inner = match?.[2];
  if (inner !== undefined && inner.trim() === '') fail('the parentheses are empty');
  const specifier = inner === undefined || inner.trim() === '*' ? undefined : inner.trim();
  return { raw, tool, specifier, location };
}

/** {@link parseRule} without throwing. */
export function tryParseRule(
  text: string,
  location?: RuleLocation,
): { readonly rule: Rule } | { readonly error: UserError } {
  try {
    return { rule: parseRule(text, location) };
  } catch (error) {
    if (error instanceof UserError) return { error };
    throw error;
  }
}

/**
 * Whether `rule` names the canonical tool `canonical`: by canonical or model-facing name, by a
 * Claude Code name that admits it, or by a wildcard (`*`, `mcp__server__*`). For a deny rule with
 * a specifier, Claude Code names reach every tool of their kind (`Read(...)` also applies to
 * `grep`, `glob` and `list_dir`).
 */
export function ruleNamesTool(rule: Rule, canonical: string, effect: RuleEffect, ctx?: RuleContext): boolean {
  const wanted = rule.tool.toLowerCase();
  const modelName = ctx?.modelNames?.[canonical];
  const names = [canonical.toLowerCase(), ...(modelName === undefined ? [] : [modelName.toLowerCase()])];
  if (wanted.includes('*')) return names.some((name) => globName(wanted).test(name));
  if (names.includes(wanted)) return true;
  if (wanted.startsWith(MCP_PREFIX) && !wanted.slice(MCP_PREFIX.length).includes('__')) {
    // `mcp__github`: the whole server.
    return names.some((name) => name.startsWith(`${wanted}__`));
  }
  const claude = claudeCodeTool(rule.tool);
  if (!claude || !('admits' in claude)) return false;
  const scope =
    effect === 'deny' && rule.specifier !== undefined ? (claude.denyScope ?? claude.admits) : claude.admits;
  return scope.includes(canonical);
}

/**
 * Why the specifier of `rule` cannot apply to `canonical`, or undefined when it can (or the rule
 * has none). A rule that cannot be checked admits nothing in `tools` and removes the whole tool in
 * `disallowedTools`: it never fails open.
 */
export function specifierProblem(rule: Rule, canonical: string): string | undefined {
  if (rule.specifier === undefined) return undefined;
  const kind = specifierKind(canonical);
  if (kind === undefined) return `\`${canonical}\` takes no specifier`;
  if (kind === 'domain' && !rule.specifier.startsWith('domain:')) {
    return 'web fetch rules are written `WebFetch(domain:example.com)`';
  }
  return undefined;
}

/** The arguments of one call, as the tool receives them (canonical parameter names). */
export type CallArgs = Readonly<Record<string, unknown>>;

/**
 * Whether `rule` matches one call of `canonical` with `args`. A bare rule matches every call of a
 * tool it names. For an allow rule, a command matches only when every simple command in it
 * matches (and it has no substitutions or file redirections); for a deny rule, when any part of
 * it does, including what runs inside `$(...)` and behind wrappers such as `timeout`.
 *
 * Paths are matched as written, resolved against `ctx.cwd` only: symbolic links are not followed.
 * The permission gate also follows them (a deny rule covers a file reached through a link, an
 * allow rule admits it only when both the written and the real path match), so `matchRule` can
 * answer `false` for a call the gate denies.
 */
export function matchRule(
  rule: Rule,
  canonical: string,
  args: CallArgs,
  ctx: RuleContext,
  effect: RuleEffect = 'allow',
): boolean {
  if (!ruleNamesTool(rule, canonical, effect, ctx)) return false;
  if (rule.specifier === undefined) return true;
  if (specifierProblem(rule, canonical) !== undefined) return effect === 'deny';
  const kind = specifierKind(canonical) as SpecifierKind;
  switch (kind) {
    case 'command':
      return effect === 'allow'
        ? commandAllowed([rule], stringArg(args.command))
        : commandDenied(rule, stringArg(args.command));
    case 'read-path':
    case 'edit-path':
      return pathMatches(rule.specifier, path.resolve(ctx.cwd, stringArg(args.path) || '.'), ctx);
    case 'domain':
      return hostMatches(rule.specifier, hostOf(stringArg(args.url)));
    case 'agent':
      return stringArg(args.agent).toLowerCase() === rule.specifier.toLowerCase();
  }
}

/**
 * Whether an allow list of command rules admits `command`: every simple command must match one of
 * them, and the line must hold no substitution, no file redirection and no open quote.
 */
export function commandAllowed(rules: readonly Rule[], command: string): boolean {
  return commandRefusal(rules, command) === undefined;
}

/** Why `command` is not admitted by the command rules `rules`, or undefined when it is. */
export function commandRefusal(rules: readonly Rule[], command: string): string | undefined {
  const line = readCommandLine(command);
  if (line.unterminated) return 'it has an unterminated quote or substitution';
  if (line.substituted.length > 0) return 'it runs a command substitution (`$(...)`, backticks or `<(...)`)';
  if (line.fileRedirections.length > 0) {
    return `it redirects output to a file (\`${line.fileRedirections[0] ?? ''}\`)`;
  }
  if (line.commands.length === 0) return 'it is empty';
  for (const simple of line.commands) {
    const specifiers = rules.map((rule) => rule.specifier ?? '*');
    if (!specifiers.some((pattern) => pattern === '*' || commandMatchesPattern(simple, pattern))) {
      return line.commands.length > 1
        ? `its part \`${simple}\` matches no allowed pattern`
        : 'it matches no allowed pattern';
    }
  }
  return undefined;
}

/** Whether a deny rule catches any part of `command`. */
export function commandDenied(rule: Rule, command: string): boolean {
  if (rule.specifier === undefined) return true;
  const pattern = rule.specifier;
  return denyVariants(command).some((variant) => {
    const line = readCommandLine(variant);
    const parts = [...line.commands, ...line.substituted];
    return parts.some(
      (part) => hidesCommand(part) || denyForms(part).some((form) => commandMatchesPattern(form, pattern)),
    );
  });
}

/**
 * Whether the absolute path `target` matches a gitignore-style `pattern` (see the module comment).
 * A pattern naming a directory also matches everything below it.
 */
export function pathMatches(pattern: string, target: string, ctx: RuleContext): boolean {
  const { base, rest } = patternBase(pattern, ctx);
  const relative = path.relative(base, target);
  // Outside the base: `..` or `../x`; a name that merely starts with two dots (`..env`) is inside.
  if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) return false;
  const subject = relative.split(path.sep).join('/');
  if (rest === '' || rest === '**') return true;
  const anyDepth = !rest.includes('/');
  const options = { dot: true, basename: anyDepth };
  // Compiled once for the path and each of its ancestors (it was compiled for each).
  const matches = picomatch()(rest.replace(/\/+$/, ''), options);
  if (matches(subject)) return true;
  // A directory pattern covers what is inside it; `docs/**` already does.
  if (subject === '') return false;
  const parts = subject.split('/');
  for (let i = 1; i < parts.length; i += 1) {
    if (matches(parts.slice(0, i).join('/'))) return true;
  }
  return false;
}

function patternBase(pattern: string, ctx: RuleContext): { base: string; rest: string } {
  if (pattern.startsWith('//')) return { base: '/', rest: pattern.slice(2) };
  if (pattern.startsWith('~/')) return { base: ctx.home ?? os.homedir(), rest: pattern.slice(2) };
  if (pattern.startsWith('/')) return { base: ctx.projectRoot ?? ctx.cwd, rest: pattern.slice(1) };
  return { base: ctx.cwd, rest: pattern.replace(/^(?:\.\/)+/, '').replace(/^\.$/, '') };
}

/** Whether `host` is allowed by a `domain:<host>` specifier (`domain:*.example.com` for subdomains). */
export function hostMatches(specifier: string, host: string | undefined): boolean {
  if (host === undefined || !specifier.startsWith('domain:')) return false;
  const domain = specifier.slice('domain:'.length).trim().toLowerCase();
  const name = host.toLowerCase().replace(/\.$/, '');
  if (domain === '*') return true;
  if (domain.startsWith('*.')) return name.endsWith(domain.slice(1));
  return name === domain;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
}

function stringArg(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

const globs = new Map<string, RegExp>();

function globName(pattern: string): RegExp {
  let regex = globs.get(pattern);
  if (!regex) {
    regex = new RegExp(`^${pattern.split('*').map(escapeRegex).join('.*')}$`, 'i');
    globs.set(pattern, regex);
  }
  return regex;
}

function escapeRegex(text: string): string {
  return text.replaceAll(/[.+?^${}()|[\]\\]/g, '\\$&');
}
