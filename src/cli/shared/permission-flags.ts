/**
 * The permission flags `troupe run`, `troupe chat`, `troupe resume` and `troupe fanout` share (docs/permissions.md): rules added
 * to every agent's (`--allow`, `--ask`, `--deny`, `--permissions FILE`), a mode for definitions in
 * `default` (`--permission-mode`), consent to `bypassPermissions`, the approval timeout, and
 * `--approve` rules that answer requests for a person (off a terminal, the only way a request can
 * be approved).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { MAX_TIMER_MS } from '../../constants.ts';
import type { PermissionMode } from '../../definition/types.ts';
import { describeValue } from '../../errors.ts';
import { loadClaudeSettings } from '../../run-dir/claude-settings.ts';
import {
  loadPermissionsFile,
  mergeRunPermissions,
  type RunPermissions,
} from '../../run-dir/plan-permissions.ts';
import { type AgentPermissions, PERMISSION_MODES } from '../../tools/permissions.ts';
import { tryParseRule } from '../../tools/rules.ts';
import type { CliIO } from './io.ts';

/** The longest `--approval-timeout`: the longest timer delay, in seconds (about 24.8 days). */
const MAX_APPROVAL_TIMEOUT_SECONDS = MAX_TIMER_MS / 1000;

/** The flags as commander parses them. */
export interface PermissionFlags {
  readonly allow?: string[];
  readonly ask?: string[];
  readonly deny?: string[];
  readonly permissions?: string;
  readonly permissionMode?: PermissionMode;
  readonly allowBypassPermissions?: boolean;
  readonly approve?: string[];
  readonly approvalTimeout?: number;
}

/** What the flags say. */
export interface CommandPermissions {
  /** Rules, mode and bypass consent (the rules file's first, then the flags'). */
  readonly permissions: RunPermissions | undefined;
  /** `--approve` rules. */
  readonly approve: readonly string[];
  /** `--approval-timeout`, in ms. */
  readonly approvalTimeoutMs: number | undefined;
  /** What the settings and rules files hold but troupe does not apply, `file:line:column: field: message`. */
  readonly warnings: readonly string[];
}

/** Adds the permission flags to `command`. */
export function permissionOptions(command: Command): Command {
  return command
    .option(
      '--allow <rule>',
      'run calls matching this rule without asking, e.g. "Bash(npm test:*)" (repeatable)',
      rules,
      undefined,
    )
    .option(
      '--ask <rule>',
      'ask before calls matching this rule, e.g. "Bash(git push:*)" (repeatable)',
      rules,
      undefined,
    )
    .option(
      '--deny <rule>',
      'never run calls matching this rule, e.g. "Edit(.env)" (repeatable)',
      rules,
      undefined,
    )
    .option('--permissions <file>', 'a YAML or JSON file of `permissions: { allow, ask, deny, mode }`')
    .option(
      '--permission-mode <mode>',
      `mode of agents whose definition says \`default\`: ${PERMISSION_MODES.join(', ')}`,
      mode,
    )
    .option(
      '--allow-bypass-permissions',
      'let agents run in bypassPermissions (everything but deny rules runs)',
    )
    .option(
      '--approve <rule>',
      'approve requests matching this rule without asking (repeatable); off a terminal every other request is denied',
      rules,
      undefined,
    )
    .option(
      '--approval-timeout <seconds>',
      'how long a call waits for a decision (0 = no limit; default 600)',
      seconds,
    );
}

/**
 * Reads the flags (and the rules file). With `claudeSettingsOf` (the working directory of an agent
 * about to start), Claude Code's settings files come first, under the rules file and the flags
 * (docs/permissions.md). Throws a file's `invalid_permissions` with file:line:column.
 */
export function commandPermissions(flags: PermissionFlags, claudeSettingsOf?: string): CommandPermissions {
  const settings = claudeSettingsOf === undefined ? undefined : loadClaudeSettings({ cwd: claudeSettingsOf });
  const file = flags.permissions === undefined ? undefined : loadPermissionsFile(flags.permissions);
  const fromFlags: RunPermissions = {
    ...(flags.permissionMode === undefined ? {} : { mode: flags.permissionMode }),
    ...(flags.allow === undefined ? {} : { allow: flags.allow }),
    ...(flags.ask === undefined ? {} : { ask: flags.ask }),
    ...(flags.deny === undefined ? {} : { deny: flags.deny }),
    ...(flags.allowBypassPermissions === true ? { allowBypass: true } : {}),
  };
  const permissions = mergeRunPermissions(
    mergeRunPermissions(settings?.permissions, file?.permissions),
    Object.keys(fromFlags).length > 0 ? fromFlags : undefined,
  );
  return {
    permissions,
    approve: flags.approve ?? [],
    approvalTimeoutMs: flags.approvalTimeout === undefined ? undefined : flags.approvalTimeout * 1000,
    warnings: [...(settings?.warnings ?? []), ...(file?.warnings ?? [])],
  };
}

/** Writes the rules file's warnings to stderr. */
export function reportPermissionWarnings(asked: CommandPermissions, io: Pick<CliIO, 'stderr'>): void {
  for (const warning of asked.warnings) io.stderr(`troupe: warning: ${warning}\n`);
}

/** What an agent run from the command line is given: the rules, mode and bypass consent, and the approval timeout. */
export function agentPermissions(asked: CommandPermissions): AgentPermissions {
  return {
    ...(asked.permissions ?? {}),
    ...(asked.approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs: asked.approvalTimeoutMs }),
  };
}

function rules(value: string, previous: string[] | undefined): string[] {
  const parsed = tryParseRule(value);
  if ('error' in parsed) throw new InvalidArgumentError(parsed.error.message);
  return [...(previous ?? []), parsed.rule.raw];
}

function mode(value: string): PermissionMode {
  if ((PERMISSION_MODES as readonly string[]).includes(value)) return value as PermissionMode;
  throw new InvalidArgumentError(
    `Expected one of ${PERMISSION_MODES.join(', ')}, got ${describeValue(value)}.`,
  );
}

/** Up to the longest timer delay: past it Node fires at once, so every approval timed out at once. */
function seconds(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0 || parsed * 1000 > MAX_TIMER_MS) {
    throw new InvalidArgumentError(
      `Expected a non-negative number of seconds up to ${MAX_APPROVAL_TIMEOUT_SECONDS} (0 = no limit), got ${describeValue(value)}.`,
    );
  }
  return parsed;
}
