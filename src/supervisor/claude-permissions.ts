/** The Supervisor's permissions with Claude Code's settings files under them (docs/permissions.md). */
import { CLAUDE_SETTINGS_WARNING_CODE, loadClaudeSettings } from '../run-dir/claude-settings.ts';
import { mergeRunPermissions } from '../run-dir/plan-permissions.ts';
import type { AgentPermissions } from '../tools/permissions.ts';

/**
 * `own` (the `permissions` option, prepared) with the rules of the settings files of `cwd`'s
 * project and of the user added first; `own.mode` wins over the files'. What the files hold but
 * troupe does not apply is a process warning ({@link CLAUDE_SETTINGS_WARNING_CODE}). Throws the
 * files' UserError `invalid_permissions`.
 */
export function withClaudeSettings(own: AgentPermissions, cwd: string): AgentPermissions {
  const settings = loadClaudeSettings({ cwd });
  for (const warning of settings.warnings) {
    process.emitWarning(warning, { type: 'TroupeWarning', code: CLAUDE_SETTINGS_WARNING_CODE });
  }
  // The files' rules first, the option's after them; the option's mode and bypass consent win.
  return { ...own, ...mergeRunPermissions(settings.permissions, own) };
}
