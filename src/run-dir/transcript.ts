/**
 * What one agent saw and did, rebuilt from its journal: a typed transcript of rounds, each with
 * the input the model was given, every model request (step) with its usage and latency, the
 * model's text, every tool call with its arguments and result, state supersessions, waits for
 * instructions, restarts, and the outcome. The HTML report, `troupe show` and the timeline all
 * read it; none of them reads journal events directly.
 *
 * Texts are kept as the journal has them (already masked when written); renderers escape and
 * mask again for the medium they print to.
 */
import { REMOVED_MARKER, SUPERSEDED_MARKER } from '../constants.ts';
import type { AuditEvent, EventOf } from '../journal/events.ts';
import { ASSISTANT_PREFIX } from '../loop/history-format.ts';
import { ProjectionReplay } from '../loop/projection-events.ts';
import { Projection } from '../projection/projection.ts';
import { addUsage, ZERO_USAGE } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import type {
  Millis,
  RequestEntry,
  RoundInput,
  ToolEntry,
  Transcript,
  TranscriptEntry,
  TranscriptOutcome,
} from './transcript-types.ts';

export type * from './transcript-types.ts';

/** Options of {@link buildTranscript}. */
export interface TranscriptOptions {
  /** Rebuild each round's input from the journal (costs a replay of the projection). @default false */
  readonly inputs?: boolean;
}

/**
 * The transcript of one agent's journal events (as `readJournal` returns them). Returns undefined
 * when the first event is not `Started` (an empty or foreign file).
 */
export function buildTranscript(
  events: readonly AuditEvent[],
  options: TranscriptOptions = {},
): Transcript | undefined {
  const first = events[0];
  if (first?.type !== 'Started') return undefined;
  return new TranscriptBuilder(first, options.inputs === true).build(events);
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

class TranscriptBuilder {
  readonly #started: EventOf<'Started'>;
  readonly #replay: { projection: Projection; replay: ProjectionReplay } | undefined;
  readonly #preamble: TranscriptEntry[] = [];
  readonly #rounds: {
    round: number;
    at: Millis;
    input: RoundInput | undefined;
    entries: TranscriptEntry[];
  }[] = [];
  readonly #requests: Mutable<RequestEntry>[] = [];
  readonly #tools = new Map<string, Mutable<ToolEntry>>();
  readonly #children: string[] = [];
  /** Which history entries display which state keys, to count what an update supersedes. */
  readonly #displays: Set<string>[] = [];
  readonly #displayedBy = new Map<string, Set<number>>();
  #usage: Usage = ZERO_USAGE;
  #cost: number | null = 0;
  #retries = 0;
  #outcome: TranscriptOutcome | undefined;
  /** Time of the last event applied. */
  #lastAt: Millis = 0;

  constructor(started: EventOf<'Started'>, inputs: boolean) {
    this.#started = started;
    if (inputs) {
      const projection = new Projection({ context: started.context, task: started.task });
      this.#replay = { projection, replay: new ProjectionReplay(projection) };
    }
  }

  build(events: readonly AuditEvent[]): Transcript {
    for (const event of events) {
      this.#apply(event);
      this.#replay?.replay.apply(event);
      this.#lastAt = Date.parse(event.ts);
    }
    const started = this.#started;
    const first = events[0];
    const last = events.at(-1);
    const outcome = this.#outcome;
    return {
      agentId: started.agentId,
      parentId: started.parentId,
      definition: { name: started.definition.name, path: started.definition.path },
      provider: started.provider,
      model: started.model,
      format: started.format ?? 1,
      task: started.task,
      context: started.context,
      metadata: started.metadata,
      systemPrompt: started.systemPrompt,
      tools: started.toolSpecs.map((spec) => spec.name),
      limits: started.limits,
      warnings: started.warnings ?? [],
      notices: started.notices ?? [],
      startedAt: first ? Date.parse(first.ts) : undefined,
      lastAt: last ? Date.parse(last.ts) : undefined,
      preamble: this.#preamble,
      rounds: this.#rounds,
      outcome,
      children: this.#children,
      usage: outcome?.usage ?? this.#usage,
      costUsd: outcome ? outcome.costUsd : this.#cost,
      steps: outcome?.steps ?? this.#requests.length,
      toolCalls: this.#tools.size,
      retries: this.#retries,
    };
  }

  #push(entry: TranscriptEntry): void {
    const round = this.#rounds.at(-1);
    if (round === undefined) this.#preamble.push(entry);
    else round.entries.push(entry);
  }

  #currentRound(): number {
    return this.#rounds.at(-1)?.round ?? 0;
  }

  #apply(event: AuditEvent): void {
    const at = Date.parse(event.ts);
    switch (event.type) {
      case 'InferenceSubmitted': {
        const request = event.request ?? 1;
        if (request === 1 || this.#rounds.at(-1)?.round !== event.round) {
          this.#rounds.push({ round: event.round, at, input: this.#input(), entries: [] });
        }
        const entry: Mutable<RequestEntry> = {
          kind: 'request',
          at,
          end: undefined,
          round: event.round,
          step: event.step,
          request,
          estimatedTokens: event.estimatedTokens,
          tools: event.tools,
          toolChoice: event.toolChoice,
          captureFor: event.captureFor,
          receipt: undefined,
          stopReason: undefined,
          errorCode: undefined,
        };
        this.#requests.push(entry);
        this.#push(entry);
        return;
      }
      case 'ProviderReceipt': {
        const open = [...this.#requests]
          .reverse()
          .find(
            (request) =>
              request.end === undefined && (event.step === undefined || request.step === event.step),
          );
        this.#usage = addUsage(this.#usage, event.receipt.usage);
        this.#cost =
          this.#cost === null || event.receipt.costUsd === undefined
            ? null
            : this.#cost + event.receipt.costUsd;
        this.#retries += event.receipt.retries;
        if (open === undefined) return;
        open.end = at;
        open.receipt = event.receipt;
        open.stopReason = event.stopReason;
        open.errorCode = event.errorCode;
        return;
      }
      case 'ToolCall': {
        const entry: Mutable<ToolEntry> = {
          kind: 'tool',
          at,
          end: undefined,
          round: event.round,
          callId: event.callId,
          name: event.name,
          modelName: event.modelName,
          args: event.args,
          rawArgs: event.rawArgs,
          result: undefined,
          interrupted: false,
          childAgentId: undefined,
          wait: undefined,
          approval: undefined,
        };
        this.#tools.set(event.callId, entry);
        this.#push(entry);
        this.#addDisplay([]);
        return;
      }
      case 'ToolResult':
        this.#toolResult(event, at);
        return;
      case 'HistoryAppended': {
        this.#addDisplay(event.displayedKeys);
        const kind = event.kind ?? 'note';
        if (kind === 'tool_call' || kind === 'tool_result') return;
        if (kind === 'assistant') {
          const text = event.text.startsWith(ASSISTANT_PREFIX)
            ? event.text.slice(ASSISTANT_PREFIX.length)
            : event.text;
          this.#push({ kind: 'text', at, round: event.round, text });
        } else this.#push({ kind: 'note', at, round: event.round, note: kind, text: event.text });
        return;
      }
      case 'StateChanged':
        this.#push({
          kind: 'state',
          at,
          round: event.round ?? this.#currentRound(),
          key: event.key,
          text: event.text,
          callId: event.callId,
          superseded: this.#supersede(event.key),
        });
        return;
      case 'Waiting': {
        const tool = this.#tools.get(event.callId);
        if (tool) tool.wait = { at, index: event.index, instructedAt: undefined, instruction: undefined };
        return;
      }
      case 'Instructed': {
        const tool =
          (event.callId === undefined ? undefined : this.#tools.get(event.callId)) ??
          [...this.#tools.values()].reverse().find((call) => call.wait?.index === event.index);
        if (tool?.wait) tool.wait = { ...tool.wait, instructedAt: at, instruction: event.text };
        return;
      }
      case 'ApprovalRequested': {
        const tool = this.#tools.get(event.callId);
        if (tool) {
          tool.approval = {
            requestedAt: at,
            requestId: event.requestId,
            rule: event.rule,
            reason: event.reason,
            decidedAt: undefined,
            approved: undefined,
            by: undefined,
            decider: undefined,
            decisionReason: undefined,
          };
        }
        return;
      }
      case 'ApprovalDecided': {
        const tool = this.#tools.get(event.callId);
        if (tool) {
          tool.approval = {
            requestedAt: tool.approval?.requestedAt,
            requestId: event.requestId ?? tool.approval?.requestId,
            rule: event.rule,
            reason: tool.approval?.reason,
            decidedAt: at,
            approved: event.approved,
            by: event.by,
            decider: event.decider,
            decisionReason: event.reason,
          };
        }
        return;
      }
      case 'Resumed': {
        const awaiting = event.awaitingCallIds ?? [];
        const cutOff = event.pendingCallIds.filter((id) => !awaiting.includes(id));
        for (const callId of cutOff) {
          const tool = this.#tools.get(callId);
          if (tool && tool.result === undefined) {
            // Cut off when its thread died, some time after the last event written before this.
            tool.interrupted = true;
            tool.end = this.#lastAt;
          }
        }
        this.#push({
          kind: 'resumed',
          at,
          nextRound: event.nextRound,
          pendingCallIds: cutOff,
          awaitingCallIds: awaiting,
        });
        return;
      }
      case 'Completed':
      case 'Failed':
        this.#outcome = {
          status: event.type === 'Completed' ? 'completed' : 'failed',
          at,
          answer: event.type === 'Completed' ? event.answer : undefined,
          result: event.type === 'Completed' ? event.result : undefined,
          reason: event.type === 'Failed' ? event.reason : undefined,
          error: event.type === 'Failed' ? event.error : undefined,
          usage: event.usage,
          costUsd: event.costUsd,
          rounds: event.rounds,
          steps: event.steps,
        };
        return;
      default:
        return;
    }
  }

  #toolResult(event: EventOf<'ToolResult'>, at: Millis): void {
    const tool = this.#tools.get(event.callId);
    if (event.projectionAccepted && event.ok) {
      for (const update of event.stateUpdates) {
        this.#push({
          kind: 'state',
          at,
          round: event.round,
          key: update.key,
          text: update.text,
          callId: event.callId,
          superseded: this.#supersede(update.key),
        });
      }
    }
    this.#addDisplay(event.projectionAccepted && event.ok ? event.displayedStateKeys : []);
    if (tool === undefined) return;
    if (!tool.interrupted) tool.end = at;
    tool.result = {
      ok: event.ok,
      text: event.text,
      refused: event.refused === true,
      projectionAccepted: event.projectionAccepted,
      stateUpdates: event.stateUpdates,
      data: event.data,
    };
    const child = childOf(event);
    if (child !== undefined) {
      tool.childAgentId = child;
      this.#children.push(child);
    }
  }

  /** A history entry displaying `keys` was pushed. */
  #addDisplay(keys: readonly string[]): void {
    const index = this.#displays.length;
    this.#displays.push(new Set(keys));
    for (const key of keys) {
      let entries = this.#displayedBy.get(key);
      if (entries === undefined) {
        entries = new Set();
        this.#displayedBy.set(key, entries);
      }
      entries.add(index);
    }
  }

  /** State `key` changed: the entries displaying it stop displaying anything. Returns how many. */
  #supersede(key: string): number {
    const entries = this.#displayedBy.get(key);
    if (entries === undefined) return 0;
    const count = entries.size;
    for (const index of [...entries]) {
      const keys = this.#displays[index];
      if (keys === undefined) continue;
      for (const other of keys) this.#displayedBy.get(other)?.delete(index);
      keys.clear();
    }
    this.#displayedBy.delete(key);
    return count;
  }

  #input(): RoundInput | undefined {
    if (this.#replay === undefined) return undefined;
    const snapshot = this.#replay.projection.snapshot();
    const displayed = new Set(snapshot.history.flatMap((entry) => entry.displayedStateKeys));
    return {
      context: snapshot.context,
      task: snapshot.task,
      history: snapshot.history.map((entry) => ({
        text: entry.text,
        superseded: entry.text === SUPERSEDED_MARKER || entry.text === REMOVED_MARKER,
      })),
      states: snapshot.states.filter((state) => !displayed.has(state.key)),
    };
  }
}

/** The agent a `spawn_agent` result names. */
function childOf(event: EventOf<'ToolResult'>): string | undefined {
  if (!event.ok || typeof event.data !== 'object' || event.data === null) return undefined;
  const id = (event.data as { agentId?: unknown }).agentId;
  return event.name === 'spawn_agent' && typeof id === 'string' ? id : undefined;
}

/** Every entry of a transcript in order, the preamble first. */
export function transcriptEntries(transcript: Transcript): TranscriptEntry[] {
  return [...transcript.preamble, ...transcript.rounds.flatMap((round) => round.entries)];
}
