/** The Supervisor's permissions with Claude Code's settings files under them (docs/permissions.md). */
import { CLAUDE_SETTINGS_WARNING_CODE, loadClaudeSettings } from '../run-dir/claude-settings.ts';
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
  const found = settings.permissions;
  if (found === undefined) return own;
  const join = (list: 'allow' | 'ask' | 'deny'): readonly string[] => [
    ...(found[list] ?? []),
    ...(own[list] ?? []),
  ];
  const mode = own.mode ?? found.mode;
  return {
    ...own,
    ...(mode === undefined ? {} : { mode }),
    allow: join('allow'),
    ask: join('ask'),
    deny: join('deny'),
  };
}
