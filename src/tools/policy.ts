/**
 * Tool policy: which registered tools an agent is admitted to use, and which calls of them, derived
 * from its definition's `tools`, `disallowedTools` and `permissionMode`. The toolbox applies it when
 * the agent is built and again at every call.
 *
 * Every entry is a rule (rules.ts): a tool name in any case, by canonical, model-facing or Claude
 * Code name, optionally with a specifier that narrows it to some calls. A deny list never fails
 * open: an entry it cannot read removes the whole tool it names, and an entry with a specifier it
 * cannot check removes the whole tool rather than nothing.
 */
import { realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { AgentDefinition } from '../definition/types.ts';
import { extend } from '../objects.ts';
import { OPT_IN_TOOLS, specifierKind } from './names.ts';
import {
  type CallArgs,
  commandDenied,
  commandRefusal,
  hostMatches,
  matchRule,
  pathMatches,
  type Rule,
  type RuleContext,
  ruleNamesTool,
  specifierProblem,
  tryParseRule,
} from './rules.ts';
import type { Tool, ToolGuard } from './types.ts';

export { CLAUDE_CODE_TOOLS, claudeCodeTool } from './names.ts';

/** The part of a definition the policy reads. */
export type PolicyDefinition = Pick<AgentDefinition, 'tools' | 'disallowedTools' | 'permissionMode'> &
  Partial<Pick<AgentDefinition, 'toolNameOverrides'>>;

/** Where path rules are resolved. @default cwd: process.cwd() */
export type PolicyContext = Omit<RuleContext, 'modelNames'>;

/** Admission decisions for one agent. */
export interface ToolPolicy {
  /** Why `tool` is not admitted at all, or `undefined` when it is (perhaps for some calls only). */
  refusal(tool: Tool): string | undefined;
  /** Why this call of an admitted tool is refused, or `undefined` when it may run. */
  callRefusal(tool: Tool, args: CallArgs): Promise<string | undefined>;
  /**
   * Checks for what a call reaches beyond its arguments (files found by a directory walk, HTTP
   * redirects), or undefined when no rule constrains the tool that way.
   */
  guard(tool: Tool): ToolGuard | undefined;
  /** The parsed `tools` entries (undefined: every tool). */
  readonly allowRules: readonly Rule[] | undefined;
  readonly denyRules: readonly Rule[];
}

/**
 * Builds the policy of a definition: `tools` omitted (or containing `*`) admits every tool but the
 * opt-in orchestration tools, `[]` none; `disallowedTools` wins over `tools`; `permissionMode:
 * plan` admits read-only tools only.
 */
export function buildToolPolicy(def: PolicyDefinition, context: Partial<PolicyContext> = {}): ToolPolicy {
  const ctx: RuleContext = {
    cwd: path.resolve(context.cwd ?? process.cwd()),
    ...(context.projectRoot === undefined ? {} : { projectRoot: context.projectRoot }),
    ...(context.home === undefined ? {} : { home: context.home }),
    modelNames: def.toolNameOverrides ?? {},
  };
  // Directory walks report real paths; path rules are written against the directories as named.
  const realCtx: RuleContext = extend(
    ctx,
    { cwd: realPathSync(ctx.cwd) },
    ctx.projectRoot === undefined ? {} : { projectRoot: realPathSync(ctx.projectRoot) },
  );
  const allowAll = def.tools === undefined || def.tools.some((entry) => entry.trim() === '*');
  const allowRules = allowAll ? undefined : parseAll(def.tools ?? [], 'allow');
  const denyRules = parseAll(def.disallowedTools, 'deny');
  const plan = def.permissionMode === 'plan';

  const namingAllow = (tool: Tool): Rule[] =>
    (allowRules ?? []).filter(
      (rule) =>
        ruleNamesTool(rule, tool.name, 'allow', ctx) && specifierProblem(rule, tool.name) === undefined,
    );
  const restrictingAllow = (tool: Tool): Rule[] | undefined => {
    if (allowRules === undefined) return undefined;
    const naming = namingAllow(tool);
    return naming.some((rule) => rule.specifier === undefined) ? undefined : naming;
  };
  const denyingCalls = (tool: Tool): Rule[] =>
    denyRules.filter((rule) => rule.specifier !== undefined && ruleNamesTool(rule, tool.name, 'deny', ctx));

  const refusalOf = (tool: Tool): string | undefined => {
    const removed = denyRules.find(
      (rule) =>
        ruleNamesTool(rule, tool.name, 'deny', ctx) &&
        (rule.specifier === undefined || specifierProblem(rule, tool.name) !== undefined),
    );
    if (removed) return `it is in disallowedTools (\`${removed.raw}\`)`;
    if (OPT_IN_TOOLS.has(tool.name)) {
      const named = namingAllow(tool).some((rule) => !rule.tool.includes('*'));
      if (!named) return 'orchestration tools are admitted only when `tools` names them';
    } else if (!allowAll && namingAllow(tool).length === 0) {
      return 'it is not in the allowed tools';
    }
    if (plan && !tool.readOnly) return 'permissionMode plan admits read-only tools only';
    return undefined;
  };

  // What the rules say of a tool depends on its name and readOnly only, and the toolbox asks at
  // every call: the answers are kept per tool object (a registry hands out the same object for a
  // tool, and a new object, e.g. after an MCP server reconnects, is looked at afresh).
  const answers = new WeakMap<Tool, ToolAnswers>();
  const answersFor = (tool: Tool): ToolAnswers => {
    let known = answers.get(tool);
    if (known === undefined) {
      known = { refusal: refusalOf(tool), deny: denyingCalls(tool), restricting: restrictingAllow(tool) };
      answers.set(tool, known);
    }
    return known;
  };

  const checkCall = async (tool: Tool, args: CallArgs, rules: ToolAnswers): Promise<string | undefined> => {
    for (const rule of rules.deny) {
      if (await matchesCall(rule, tool.name, args, ctx, realCtx, 'deny')) {
        return `it matches \`${rule.raw}\` in disallowedTools`;
      }
    }
    const restricting = rules.restricting;
    if (restricting === undefined) return undefined;
    const listed = restricting.map((rule) => `\`${rule.raw}\``).join(', ');
    if (specifierKind(tool.name) === 'command') {
      const why = commandRefusal(restricting, typeof args.command === 'string' ? args.command : '');
      return why === undefined
        ? undefined
        : `this agent may only run commands matching ${listed}, and ${why}`;
    }
    for (const rule of restricting) {
      if (await matchesCall(rule, tool.name, args, ctx, realCtx, 'allow')) return undefined;
    }
    return `this agent may only make calls matching ${listed}`;
  };

  return {
    allowRules,
    denyRules,
    refusal(tool) {
      return answersFor(tool).refusal;
    },
    callRefusal(tool, args) {
      const rules = answersFor(tool);
      // No rule narrows this tool's calls: nothing to check (the common case, at every call).
      if (rules.deny.length === 0 && rules.restricting === undefined) return NO_REFUSAL;
      return checkCall(tool, args, rules);
    },
    guard(tool) {
      const kind = specifierKind(tool.name);
      const { deny, restricting } = answersFor(tool);
      if (kind === 'read-path' || kind === 'edit-path') {
        if (deny.length === 0) return undefined;
        const refuse = (absolute: string): string | undefined => {
          const rule = deny.find(
            (candidate) =>
              pathMatches(candidate.specifier ?? '', absolute, ctx) ||
              pathMatches(candidate.specifier ?? '', absolute, realCtx),
          );
          return rule && `\`${rule.raw}\` in disallowedTools`;
        };
        return { path: refuse };
      }
      if (kind === 'domain') {
        if (deny.length === 0 && restricting === undefined) return undefined;
        return {
          host(host) {
            const denied = deny.find((rule) => hostMatches(rule.specifier ?? '', host));
            if (denied) return `\`${denied.raw}\` in disallowedTools`;
            if (restricting && !restricting.some((rule) => hostMatches(rule.specifier ?? '', host))) {
              return `only ${restricting.map((rule) => `\`${rule.raw}\``).join(', ')} are allowed`;
            }
            return undefined;
          },
        };
      }
      return undefined;
    },
  };
}

/**
 * What a policy's rules say of one tool: why it is not admitted (undefined: it is), and the rules
 * that narrow its calls: deny rules with a specifier, and allow rules that restrict it.
 */
interface ToolAnswers {
  readonly refusal: string | undefined;
  readonly deny: readonly Rule[];
  /** Undefined: an allow rule admits every call of the tool (or there is no allow list). */
  readonly restricting: readonly Rule[] | undefined;
}

/** What `callRefusal` answers when no rule narrows the tool's calls. */
const NO_REFUSAL: Promise<string | undefined> = Promise.resolve(undefined);

/** Parses entries; a deny entry that cannot be read still removes the tool it names. */
function parseAll(entries: readonly string[], effect: 'allow' | 'deny'): Rule[] {
  const rules: Rule[] = [];
  for (const entry of entries) {
    const parsed = tryParseRule(entry);
    if ('rule' in parsed) {
      rules.push(parsed.rule);
    } else if (effect === 'deny') {
      const tool = entry.trim().split('(')[0]?.trim() ?? '';
      if (tool !== '') rules.push({ raw: entry.trim(), tool, specifier: undefined, location: undefined });
    }
  }
  return rules;
}

/**
 * {@link matchRule}, with path rules also checked against the path with symlinks resolved: a deny
 * rule catches a link to a denied file, and an allow rule admits a path only if both forms match.
 */
async function matchesCall(
  rule: Rule,
  canonical: string,
  args: CallArgs,
  ctx: RuleContext,
  realCtx: RuleContext,
  effect: 'allow' | 'deny',
): Promise<boolean> {
  const kind = specifierKind(canonical);
  if (effect === 'deny' && kind === 'command') return commandDenied(rule, stringOf(args.command));
  const lexical = matchRule(rule, canonical, args, ctx, effect);
  if ((kind !== 'read-path' && kind !== 'edit-path') || rule.specifier === undefined) return lexical;
  const real = await realPathOf(path.resolve(ctx.cwd, stringOf(args.path) || '.'));
  if (real === undefined) return lexical;
  const resolved = pathMatches(rule.specifier, real, realCtx);
  return effect === 'deny' ? lexical || resolved : lexical && resolved;
}

function realPathSync(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

async function realPathOf(file: string): Promise<string | undefined> {
  try {
    return await realpath(file);
  } catch {
    return undefined;
  }
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
