/**
 * The one place a replayed agent's tool calls are decided, on either engine and in-process: the
 * loop asks {@link ReplayCalls.decide} for every call that passed the toolbox's checks, just before
 * the tool would run.
 *
 * The rule, per call of a tool other than the pass-through ones ({@link REPLAY_PASS_THROUGH}):
 * 1. Its key is its canonical tool name and the canonical JSON of its arguments under their
 *    canonical parameter names ({@link callKey}): a definition's `paramNameOverrides`, the
 *    recorded one or the replaying one, never makes two calls differ.
 * 2. The k-th call with a key that is decided in the replay gets the k-th recorded call with the
 *    same key, in recording order: answered with that call's recorded result, nothing runs
 *    (`recorded`). Repeating an identical call therefore walks through the recorded results of
 *    that call in order (a file read twice, changed in between, gives the two recorded contents).
 * 3. A call with no recorded call left for its key runs when its tool is read-only (`live`), and
 *    is otherwise refused with {@link replayRefusal} (`refused`), which the model sees as a failed
 *    result.
 *
 * `complete_task`, `wait_for_instruction` and the orchestration tools pass through: they run as in
 * any run (a replayed orchestrator's subagents are spawned for real, and replayed from their own
 * recordings by the supervisor).
 *
 * Approval gates (issue 17) come after this decision in a call's path: a `recorded` call is answered
 * from its recording without reaching a gate, so it is never asked again, and what was decided
 * then is in its recorded result (an approved call's output, a denial's text); a `live` call goes
 * through the gates like any call. A recorded approval decision, once journals carry one, belongs
 * with the matched {@link RecordedCall}, where a gate can read it.
 *
 * The state (how many calls of each key were decided) is rebuilt from the replay's own journal on
 * resume: every ToolResult with a `replay` disposition counts its call's key once.
 */
import type { AuditEvent, EventOf } from '../journal/events.ts';
import {
  COMPLETE_TASK,
  ORCHESTRATION_TOOL_NAMES,
  WAIT_FOR_INSTRUCTION,
} from '../tools/builtin/orchestration.ts';
import { canonicalArgs } from '../tools/params.ts';
import type { ToolOutcome } from '../tools/types.ts';
import { callKey, type ParamNameOverrides } from './recording.ts';
import type { RecordedCall, ReplayCounts, ReplayDisposition, ReplayRecording, ReplayRef } from './types.ts';

/** Tools a replay never decides: they run as in any run. */
export const REPLAY_PASS_THROUGH: ReadonlySet<string> = new Set([
  COMPLETE_TASK,
  WAIT_FOR_INSTRUCTION,
  ...ORCHESTRATION_TOOL_NAMES,
]);

/** What the model is told when a replay refuses a call. */
export function replayRefusal(modelName: string): string {
  return (
    `\`${modelName}\` was not run: this is a replay of a recorded run, the recording has no call to ` +
    `\`${modelName}\` with these arguments, and only read-only tools run live in a replay. ` +
    'Continue without its result.'
  );
}

/** How one call is answered. */
export interface ReplayDecision {
  readonly disposition: ReplayDisposition;
  /** The answer for `recorded` and `refused`; absent for `live` (the tool runs). */
  readonly outcome?: ToolOutcome;
  /** The recorded call a `recorded` call was matched to. */
  readonly recorded?: RecordedCall;
}

/** A replayed agent's recording and how far the replay has used it. */
export class ReplayCalls {
  readonly ref: ReplayRef;
  readonly #recorded = new Map<string, RecordedCall[]>();
  /** Calls decided so far, per key. */
  readonly #decided = new Map<string, number>();
  #counts = { recorded: 0, live: 0, refused: 0 };

  /**
   * `earlier` is the replay's own journal when the agent resumes: the calls it decided already
   * count, so the next identical call gets the next recorded result, as it would have. Its calls'
   * arguments are read back to canonical names with `overrides`, the `paramNameOverrides` of the
   * definition the replay runs.
   */
  constructor(
    recording: ReplayRecording,
    earlier: readonly AuditEvent[] = [],
    overrides: ParamNameOverrides = {},
  ) {
    this.ref = recording.ref;
    for (const call of recording.calls) {
      const key = callKey(call.name, call.args);
      const list = this.#recorded.get(key);
      if (list) list.push(call);
      else this.#recorded.set(key, [call]);
    }
    const calls = new Map<string, EventOf<'ToolCall'>>();
    for (const event of earlier) {
      if (event.type === 'ToolCall') calls.set(event.callId, event);
      if (event.type !== 'ToolResult' || event.replay === undefined) continue;
      const call = calls.get(event.callId);
      if (call) this.#take(callKey(call.name, canonicalArgs(call.name, call.args ?? {}, overrides)));
      this.#counts = { ...this.#counts, [event.replay]: this.#counts[event.replay] + 1 };
    }
  }

  /** Whether the replay decides calls of tool `name` (canonical); pass-through tools run as usual. */
  decides(name: string): boolean {
    return !REPLAY_PASS_THROUGH.has(name);
  }

  /** Calls decided so far, this run and the runs it resumed. */
  get counts(): ReplayCounts {
    return this.#counts;
  }

  /**
   * Decides a call of tool `name` (canonical; `modelName` as the model called it) with `args`
   * under their canonical parameter names (as the tool would get them), whose tool is `readOnly` or
   * not. Undefined for a pass-through tool.
   */
  decide(
    name: string,
    modelName: string,
    args: Readonly<Record<string, unknown>>,
    readOnly: boolean,
  ): ReplayDecision | undefined {
    if (!this.decides(name)) return undefined;
    const recorded = this.#take(callKey(name, args));
    let decision: ReplayDecision;
    if (recorded) {
      const { result } = recorded;
      decision = {
        disposition: 'recorded',
        recorded,
        outcome: {
          ok: result.ok,
          text: result.text,
          stateUpdates: result.stateUpdates,
          displayedStateKeys: result.displayedStateKeys,
          ...(result.data === undefined ? {} : { data: result.data }),
        },
      };
    } else if (readOnly) {
      decision = { disposition: 'live' };
    } else {
      decision = { disposition: 'refused', outcome: { ok: false, text: replayRefusal(modelName) } };
    }
    this.#counts = { ...this.#counts, [decision.disposition]: this.#counts[decision.disposition] + 1 };
    return decision;
  }

  /** Counts one more decided call of `key`; returns the recorded call it gets, if one is left. */
  #take(key: string): RecordedCall | undefined {
    const index = this.#decided.get(key) ?? 0;
    this.#decided.set(key, index + 1);
    return this.#recorded.get(key)?.[index];
  }
}
