/**
 * Approvals as they travel: an agent's request for a person's decision on one tool call, and the
 * decision. Both cross threads (an actor host's inbox port), processes and machines (Redis), so
 * they are plain data. See docs/permissions.md.
 */
import { REDACTED } from '../journal/constants.ts';

/** A tool call waiting for a decision. */
export interface ApprovalRequest {
  /** Names the request everywhere (events, `approve`, `deny`, `troupe approve`); derived from agent and call. */
  readonly requestId: string;
  readonly agentId: string;
  /** The provider's id of the tool call. */
  readonly callId: string;
  /** Canonical tool name. */
  readonly tool: string;
  /** The name the model called it by (after toolNameOverrides). */
  readonly modelName: string;
  /**
   * The arguments as the model gave them (model-facing parameter names), secrets masked as the
   * journal masks them (`redactValue`): the tool, once approved, runs with the real ones.
   */
  readonly args: Readonly<Record<string, unknown>>;
  /** The arguments the tool receives (canonical parameter names), masked like `args`: what `--approve` rules match. */
  readonly toolArgs: Readonly<Record<string, unknown>>;
  /**
   * SHA-256 (hex) of the canonical JSON of `args` as shown here, masked: never a hash of a secret,
   * which a short one could be recovered from by guessing. Equal to the real arguments' hash when
   * masking changed nothing.
   */
  readonly argsHash: string;
  /**
   * Set when masking changed the arguments: `args` are not what the tool runs with, and the journal
   * does not hold the real ones (a resumed agent closes such a call unrun).
   */
  readonly argsMasked?: true;
  /**
   * The rule that asked: an `ask` rule as written (`Bash(git push:*)`), or the tool's canonical
   * name when its permission mode or its own `needsApproval` asked. Remembering a decision for the
   * session (`remember: 'session'`) approves later asks of the same rule, unless masking changed
   * the rule (see {@link rememberable}).
   */
  readonly rule: string;
  /** Why it asks, for people: "permissionMode default asks before shell commands". */
  readonly reason: string;
  /** Epoch ms at which the request times out; null = no limit. */
  readonly deadline: number | null;
  /** ISO 8601 time it was asked. */
  readonly requestedAt: string;
}

/** Who or what decided a request. */
export type ApprovalDecider =
  /** A person: `handle.approve` / `handle.deny`, a CLI prompt, `troupe approve`. */
  | 'person'
  /** A rule answered for a person: a rule remembered for the session, a CLI `--approve` rule. */
  | 'rule'
  /** Nobody decided before the request's deadline. */
  | 'timeout'
  /** Nobody listens for approvals (no `agent:approval` listener): asks are denied at once. */
  | 'unattended'
  /** The agent's permissions changed since it asked (a resumed agent whose call no longer asks). */
  | 'policy';

/** The decision on one request. */
export interface ApprovalDecision {
  readonly approved: boolean;
  /** Why; a denial's reason is part of the tool result the model sees. */
  readonly reason?: string;
  /** `session`: approve later asks of the same rule without asking (every agent of the supervisor). */
  readonly remember?: 'call' | 'session';
  readonly by: ApprovalDecider;
  /** Who exactly: `tty`, `program`, `troupe approve (host:pid)`, the `--approve` rule that answered. */
  readonly decider?: string;
}

/** Why a request whose rule holds a masked secret cannot be approved for the session. */
export const NOT_REMEMBERABLE =
  'its rule holds a masked secret, so remembering it would approve the same call with any value';

/**
 * Whether a decision on a request of `rule` may be remembered for the session. Not when the rule
 * holds a masked secret (`run_terminal_cmd(curl -u admin:[REDACTED] ...)`, a shell line asked as
 * written): a remembered rule is matched as shown, masked, so it would approve the same call with
 * any other secret in its place. Such a request is approved for its call only.
 */
export function rememberable(rule: string): boolean {
  return !rule.includes(REDACTED);
}
