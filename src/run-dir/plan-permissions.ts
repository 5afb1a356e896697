import { MAX_TIMER_MS } from '../constants.ts';
import { suggestion } from '../definition/fields.ts';
import type { PermissionMode } from '../definition/types.ts';
import { PERMISSION_MODES } from '../tools/permissions.ts';
import { tryParseRule } from '../tools/rules.ts';
import { expected, PERMISSIONS_FILE } from './plan-problems.ts';
import { fieldName, readYamlFile, type Segment } from './yaml-source.ts';

/** Permissions of every agent of a run, besides each definition's (docs/permissions.md). */
export interface RunPermissions {
  /** Mode of definitions whose `permissionMode` is `default`. */
  readonly mode?: PermissionMode;
  readonly allow?: readonly string[];
  readonly ask?: readonly string[];
  readonly deny?: readonly string[];
  /** Lets agents run in `bypassPermissions`. */
  readonly allowBypass?: boolean;
}

/** How a run's calls wait for decisions. */
export interface RunApprovals {
  /** 0 = no limit. */
  readonly timeoutMs?: number;
  readonly onTimeout?: 'deny' | 'allow';
}

const PERMISSION_KEYS = ['mode', 'allow', 'ask', 'deny', 'allowBypass'] as const;

/** Said of Claude Code's `additionalDirectories`, which troupe reads but does not apply. */
export const ADDITIONAL_DIRECTORIES_WARNING =
  'ignored: troupe does not widen the working directory; file tools stay confined to it (--cwd)';

/** Claude Code's permission keys troupe does not apply, and what it says of each. */
const IGNORED_CLAUDE_KEYS: Readonly<Record<string, string>> = {
  additionalDirectories: ADDITIONAL_DIRECTORIES_WARNING,
  disableBypassPermissionsMode:
    'ignored: troupe runs bypassPermissions only with --allow-bypass-permissions (allowBypass)',
};
const APPROVAL_KEYS = ['timeoutMs', 'onTimeout'] as const;

/** Reports a problem at a path of the document. */
export type Fail = (path: readonly Segment[], message: string, at?: 'key') => void;

/** How {@link readRunPermissions} reads a file that may be Claude Code's settings.json. */
export interface ClaudeCodeKeys {
  /** Reports what is read but not applied. */
  readonly warn: Fail;
  /**
   * A settings file troupe found by itself (`.claude/settings.json`): it cannot give the bypass
   * consent (`allowBypass`), which stays the caller's.
   */
  readonly found?: boolean;
}

/**
 * Reads `permissions` at `path`; undefined when absent or wrong (each problem reported). With
 * `claude` (a file that may be Claude Code's settings.json), Claude Code's `defaultMode` is read as
 * `mode`, and `additionalDirectories` and `disableBypassPermissionsMode` are warnings.
 */
export function readRunPermissions(
  value: unknown,
  path: readonly Segment[],
  fail: Fail,
  claude?: ClaudeCodeKeys,
): RunPermissions | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    fail(path, expected(`a mapping of ${PERMISSION_KEYS.join(', ')}`, value));
    return undefined;
  }
  let ok = true;
  const result: { -readonly [K in keyof RunPermissions]: RunPermissions[K] } = {};
  if (claude !== undefined && 'mode' in value && 'defaultMode' in value) {
    fail([...path, 'defaultMode'], expected('`mode` or `defaultMode`, not both', 'defaultMode'), 'key');
    ok = false;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = [...path, key];
    const ignored = claude === undefined ? undefined : IGNORED_CLAUDE_KEYS[key];
    if (claude !== undefined && ignored !== undefined) {
      claude.warn(at, ignored, 'key');
    } else if (claude?.found === true && key === 'allowBypass') {
      fail(
        at,
        'expected no `allowBypass` here: only the command line (--allow-bypass-permissions) or the caller consents to bypassPermissions',
        'key',
      );
      ok = false;
    } else if (
      !(PERMISSION_KEYS as readonly string[]).includes(key) &&
      !(claude !== undefined && key === 'defaultMode')
    ) {
      fail(
        at,
        `${expected(`one of ${PERMISSION_KEYS.join(', ')}`, key)}${suggestion(key, PERMISSION_KEYS)}`,
        'key',
      );
      ok = false;
    } else if (key === 'mode' || key === 'defaultMode') {
      if (typeof item === 'string' && (PERMISSION_MODES as readonly string[]).includes(item)) {
        result.mode = item as PermissionMode;
      } else {
        fail(at, expected(`one of ${PERMISSION_MODES.join(', ')}`, item));
        ok = false;
      }
    } else if (key === 'allowBypass') {
      if (typeof item === 'boolean') result.allowBypass = item;
      else {
        fail(at, expected('true or false', item));
        ok = false;
      }
    } else {
      const rules = readRules(item, at, fail);
      if (rules === undefined) ok = false;
      else result[key as 'allow' | 'ask' | 'deny'] = rules;
    }
  }
  return ok ? result : undefined;
}

/** Reads `approvals` at `path`. */
export function readRunApprovals(
  value: unknown,
  path: readonly Segment[],
  fail: Fail,
): RunApprovals | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    fail(path, expected(`a mapping of ${APPROVAL_KEYS.join(', ')}`, value));
    return undefined;
  }
  let ok = true;
  const result: { -readonly [K in keyof RunApprovals]: RunApprovals[K] } = {};
  for (const [key, item] of Object.entries(value)) {
    const at = [...path, key];
    // Past the longest timer delay Node fires at once: every approval timed out at once.
    if (
      key === 'timeoutMs' &&
      typeof item === 'number' &&
      Number.isInteger(item) &&
      item >= 0 &&
      item <= MAX_TIMER_MS
    ) {
      result.timeoutMs = item;
    } else if (key === 'onTimeout' && (item === 'deny' || item === 'allow')) {
      result.onTimeout = item;
    } else {
      ok = false;
      if (!(APPROVAL_KEYS as readonly string[]).includes(key))
        fail(
          at,
          `${expected(`one of ${APPROVAL_KEYS.join(', ')}`, key)}${suggestion(key, APPROVAL_KEYS)}`,
          'key',
        );
      else
        fail(
          at,
          expected(
            key === 'timeoutMs'
              ? `a non-negative integer up to ${MAX_TIMER_MS} (0 = no limit)`
              : '`deny` or `allow`',
            item,
          ),
        );
    }
  }
  return ok ? result : undefined;
}

function readRules(value: unknown, path: readonly Segment[], fail: Fail): string[] | undefined {
  if (!Array.isArray(value)) {
    fail(path, expected('a list of rules such as `Bash(npm test:*)`', value));
    return undefined;
  }
  const rules: string[] = [];
  let ok = true;
  value.forEach((item: unknown, index) => {
    const at = [...path, index];
    if (typeof item !== 'string') {
      fail(at, expected('a rule such as `Bash(npm test:*)`', item));
      ok = false;
      return;
    }
    const parsed = tryParseRule(item);
    if ('error' in parsed) {
      fail(at, parsed.error.message);
      ok = false;
      return;
    }
    rules.push(parsed.rule.raw);
  });
  return ok ? rules : undefined;
}

/** A permissions file read by {@link loadPermissionsFile}. */
export interface PermissionsFile {
  readonly permissions: RunPermissions;
  /** `file:line:column: field: message` of what was read but not applied (`additionalDirectories`). */
  readonly warnings: readonly string[];
}

/**
 * Reads a rules file (`--permissions FILE`): YAML or JSON holding a `permissions` mapping, or
 * the mapping itself; a Claude Code settings.json reads as one (`defaultMode` is `mode`). Throws
 * UserError `invalid_permissions` (every problem, with file:line:column) or
 * `permissions_not_found` when it cannot be read.
 */
export function loadPermissionsFile(file: string): PermissionsFile {
  return readPermissionsDocument(file, false);
}

/**
 * Reads the `permissions` of a Claude Code settings file troupe found by itself
 * (`.claude/settings.json`): the document must be a mapping, its other keys are Claude Code's and
 * ignored, and it cannot consent to `bypassPermissions`. Throws as {@link loadPermissionsFile}.
 */
export function loadClaudeSettingsFile(file: string): PermissionsFile {
  return readPermissionsDocument(file, true);
}

function readPermissionsDocument(file: string, found: boolean): PermissionsFile {
  const { path, source, problems } = readYamlFile(
    file,
    found ? 'a Claude Code settings file' : 'a permissions file',
    'permissions_not_found',
    PERMISSIONS_FILE,
  );
  const value = source.value();
  const nested = found || (isRecord(value) && 'permissions' in value);
  const warnings: string[] = [];
  const locate = (at: readonly Segment[], where: 'key' | undefined) => {
    const key = at.at(-1);
    return where === 'key' && typeof key === 'string'
      ? source.keyAt(at.slice(0, -1), key)
      : source.valueAt(at);
  };
  const fail: Fail = (at, message, where) => problems.add(path, locate(at, where), fieldName(at), message);
  const warn: Fail = (at, message, where) => {
    const { line, column } = locate(at, where);
    warnings.push(`${path}:${line}:${column}: ${fieldName(at)}: ${message}`);
  };
  let permissions: RunPermissions | undefined;
  if (found && !isRecord(value)) fail([], expected('a JSON object of settings', value));
  else if (nested && isRecord(value)) {
    permissions = readRunPermissions(value.permissions, ['permissions'], fail, { warn, found });
  } else permissions = readRunPermissions(value, [], fail, { warn });
  problems.throwIfAny(path, PERMISSIONS_FILE);
  return { permissions: permissions ?? {}, warnings };
}

/** `extra`'s rules added to `base`'s; its mode and bypass consent win. */
export function mergeRunPermissions(
  base: RunPermissions | undefined,
  extra: RunPermissions | undefined,
): RunPermissions | undefined {
  if (extra === undefined) return base;
  if (base === undefined) return extra;
  const join = (list: 'allow' | 'ask' | 'deny') => [...(base[list] ?? []), ...(extra[list] ?? [])];
  const mode = extra.mode ?? base.mode;
  const allowBypass = extra.allowBypass ?? base.allowBypass;
  return {
    ...(mode === undefined ? {} : { mode }),
    allow: join('allow'),
    ask: join('ask'),
    deny: join('deny'),
    ...(allowBypass === undefined ? {} : { allowBypass }),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
