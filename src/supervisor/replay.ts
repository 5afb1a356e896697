/**
 * Replays on the supervisor: where a replayed agent's recording comes from, loading it before the
 * agent runs, and which recording a replayed orchestrator's subagent gets. The tool calls
 * themselves are decided where the agent runs (src/replay/replay-calls.ts).
 */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { MAX_REPLAY_JOURNAL_BYTES } from '../constants.ts';
import { SystemError, UserError } from '../errors.ts';
import type { AuditEvent } from '../journal/events.ts';
import { parseJournal } from '../journal/reader.ts';
import { journalDamage } from '../journal/verify.ts';
import { callKey, recordedInstructions, recordingOf } from '../replay/recording.ts';
import type { ReplayRecording } from '../replay/types.ts';
import { SPAWN_AGENT } from '../tools/builtin/orchestration.ts';

/** A recorded journal: a file path, or its events. */
export type RecordedJournal = string | readonly AuditEvent[];

/** Where a replayed agent's recording comes from (`SpawnOptions.replay`). */
export interface ReplaySource {
  /**
   * The recorded agent's journal: a file path or its events; null for an agent with no recording
   * (then every call of a tool that is not read-only is refused).
   */
  readonly journal: RecordedJournal | null;
  /** The replay reference (Started `replay.of`, usage records). @default the journal's absolute path, else `'events'` */
  readonly of?: string;
  /**
   * The journals of the recorded agent's subagents by recorded agent id, for a replayed
   * orchestrator. @default the `<agent id>.jsonl` files beside a journal given as a path
   */
  readonly journals?: (agentId: string) => RecordedJournal | undefined;
  /**
   * Send the instructions the recorded agent received again, in order, before any other.
   * @default true (a replayed orchestrator's subagents get theirs from their replayed parent)
   */
  readonly instructions?: boolean;
}

/** A replayed agent's recording, once loaded, and what its subagents replay. */
export interface ReplayState {
  readonly source: ReplaySource;
  readonly of: string;
  readonly recording: ReplayRecording;
  /** Spawns of each key made so far (the k-th identical spawn gets the k-th recorded subagent). */
  readonly spawns: Map<string, number>;
}

/** The reference a source is recorded under. */
export function replayOf(source: ReplaySource): string {
  if (source.of !== undefined) return source.of;
  return typeof source.journal === 'string' ? resolve(source.journal) : 'events';
}

/**
 * Loads a source's recording and the instructions to send again. Throws UserError
 * `replay_journal_too_large`, `replay_journal_damaged` (a line that is not a well-formed event, or
 * a broken hash chain: an edited, lost or spliced event), and the reader's and `recordingOf`'s errors.
 */
export async function loadReplay(
  source: ReplaySource,
): Promise<{ readonly state: ReplayState; readonly instructions: readonly string[] }> {
  const of = replayOf(source);
  const events = source.journal === null ? [] : await recordedEvents(source.journal);
  const recording: ReplayRecording =
    events.length === 0 ? { ref: { of }, calls: [] } : await recordingOf(events, of);
  return {
    state: { source, of, recording, spawns: new Map() },
    instructions: source.instructions === false ? [] : recordedInstructions(events),
  };
}

async function recordedEvents(journal: RecordedJournal): Promise<readonly AuditEvent[]> {
  if (typeof journal !== 'string') return journal;
  const path = resolve(journal);
  const size = await stat(path).then(
    (info) => info.size,
    (error: unknown) => {
      throw new SystemError('journal_not_found', `Expected a recorded journal at ${path}, found none`, {
        path,
        cause: String(error),
      });
    },
  );
  if (size > MAX_REPLAY_JOURNAL_BYTES) {
    throw new UserError(
      'replay_journal_too_large',
      `Expected a recorded journal of at most ${MAX_REPLAY_JOURNAL_BYTES} bytes to replay, got ${size} (${path})`,
      { path, size, limit: MAX_REPLAY_JOURNAL_BYTES },
    );
  }
  const contents = parseJournal(await readFile(path), { hashes: true });
  // An edited recording would be served as recorded: the chain is checked, not only the lines.
  const damage = journalDamage(contents);
  if (damage !== undefined) {
    throw new UserError(
      'replay_journal_damaged',
      `Expected an intact recorded journal, but ${path} is damaged at line ${damage.line} (seq ${damage.seq}): ${damage.message}; check it with \`troupe verify ${path}\``,
      { path, line: damage.line, seq: damage.seq, reason: damage.reason },
    );
  }
  return contents.events;
}

/** The subagent journals beside a journal file. */
export function siblingJournals(journal: string): (agentId: string) => string | undefined {
  const dir = dirname(resolve(journal));
  return (agentId) => {
    const file = join(dir, `${agentId}.jsonl`);
    return existsSync(file) ? file : undefined;
  };
}

/**
 * What a subagent of a replayed orchestrator replays: the recorded subagent the k-th identical
 * spawn (same agent, task and context) made when recorded, or no recording for a spawn the
 * recording does not have. Its instructions come from its replayed parent, not its recording.
 */
export function childReplaySource(
  parent: ReplayState,
  agent: string,
  spawn: { readonly task: string; readonly context?: readonly string[] },
): ReplaySource {
  const key = spawnKey({ agent, task: spawn.task, context: spawn.context });
  const index = parent.spawns.get(key) ?? 0;
  parent.spawns.set(key, index + 1);
  const recorded = parent.recording.calls.filter(
    (call) => call.name === SPAWN_AGENT && call.result.ok && spawnKey(call.args) === key,
  )[index];
  const childId = recordedAgentId(recorded?.result.data);
  const journals = parent.source.journals ?? defaultJournals(parent.source);
  const journal = childId === undefined ? undefined : journals?.(childId);
  return {
    journal: journal ?? null,
    of: parent.of,
    ...(journals ? { journals } : {}),
    instructions: false,
  };
}

function defaultJournals(source: ReplaySource): ReplaySource['journals'] {
  return typeof source.journal === 'string' ? siblingJournals(source.journal) : undefined;
}

function spawnKey(args: Readonly<Record<string, unknown>>): string {
  const context = Array.isArray(args.context) && args.context.length > 0 ? args.context.map(String) : [];
  return callKey(SPAWN_AGENT, { agent: String(args.agent), task: String(args.task), context });
}

function recordedAgentId(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const id = (data as { agentId?: unknown }).agentId;
  return typeof id === 'string' ? id : undefined;
}
