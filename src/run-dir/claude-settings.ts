/**
 * Claude Code's settings files, read for their `permissions` the way Claude Code merges them
 * (docs/permissions.md, "Where rules come from"): the user's `~/.claude/settings.json`, then the
 * project's `.claude/settings.json` and `.claude/settings.local.json` at the git root (or the
 * working directory when there is none).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { projectRootSync } from '../prompt/project-dirs.ts';
import { loadClaudeSettingsFile, mergeRunPermissions, type RunPermissions } from './plan-permissions.ts';

/** `process.emitWarning` code of what a settings file holds but troupe does not apply. */
export const CLAUDE_SETTINGS_WARNING_CODE = 'TROUPE_CLAUDE_SETTINGS';

/** What {@link loadClaudeSettings} found. */
export interface ClaudeSettings {
  /** The files read, least specific first. */
  readonly files: readonly string[];
  /**
   * Their rules added together (deny still wins, whatever file a rule is in); the mode of the
   * most specific file that gives one. Undefined when no file exists.
   */
  readonly permissions: RunPermissions | undefined;
  /** `file:line:column: field: message` of what was read but not applied (`additionalDirectories`). */
  readonly warnings: readonly string[];
}

/** Where to look for the settings files. */
export interface ClaudeSettingsOptions {
  /** The agents' working directory; the project's files are at its git root. */
  readonly cwd: string;
  /** Home directory for `~/.claude/settings.json`. @default os.homedir() (which honours `HOME`) */
  readonly home?: string;
}

/** The settings files that may exist, least specific first (a path only once). */
export function claudeSettingsFiles(options: ClaudeSettingsOptions): string[] {
  const root = projectRootSync(options.cwd);
  const files = [
    path.join(path.resolve(options.home ?? homedir()), '.claude', 'settings.json'),
    path.join(root, '.claude', 'settings.json'),
    path.join(root, '.claude', 'settings.local.json'),
  ];
  return [...new Set(files)];
}

/**
 * Reads the `permissions` of every settings file that exists. A file that does not read throws
 * UserError `invalid_permissions` with its file:line:column (`permissions_not_found` when it
 * exists but cannot be opened): rules a team relies on are never dropped silently.
 */
export function loadClaudeSettings(options: ClaudeSettingsOptions): ClaudeSettings {
  const files: string[] = [];
  const warnings: string[] = [];
  let permissions: RunPermissions | undefined;
  for (const file of claudeSettingsFiles(options)) {
    if (!existsSync(file)) continue;
    const read = loadClaudeSettingsFile(file);
    files.push(file);
    warnings.push(...read.warnings);
    permissions = mergeRunPermissions(permissions, read.permissions);
  }
  return { files, permissions, warnings };
}
