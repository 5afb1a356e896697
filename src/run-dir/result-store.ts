/**
 * What a session keeps of every result line of its run, for `summary.json` and `troupe resume`:
 * the fields of {@link SummaryLine}, in columns of numbers, not one object per line. Kept as
 * objects (a SummaryLine each, its usage, scores and two ISO times), a 20,000-line run held
 * ~11 MB and a 100,000-line one ~55 MB until it ended; here a line costs ~80 bytes plus its scores
 * as JSON text. Lines come out as SummaryLines again, one at a time, when iterated.
 *
 * What is dropped: the scores of a plan entry's superseded attempts (the summary scores each
 * entry's latest line only). Every other field comes out as it went in.
 */
import type { FailureReason, InheritedSpend } from '../loop/types.ts';
import type { Usage } from '../providers/types.ts';
import type { ReplayCounts } from '../replay/types.ts';
import type { ResultLine } from './results.ts';
import { agentIdFor } from './run-plan.ts';
import type { SummaryLine } from './summary.ts';

/** What `troupe resume` decides with, of one result line. */
export type ResumeLine = Pick<ResultLine, 'index' | 'agentId' | 'attempt' | 'status' | 'reason'>;

const INITIAL_CAPACITY = 1024;
const NO_INDEX = -1;
const NO_STEPS = -1;

/** The result lines of a run, held as columns (see the file's comment). */
export class ResultStore implements Iterable<SummaryLine> {
  readonly #idPrefix: string;
  #size = 0;
  #capacity = 0;
  #index = new Int32Array(0);
  #attempt = new Int32Array(0);
  #rounds = new Int32Array(0);
  #steps = new Int32Array(0);
  /** 0 completed, 1 failed. */
  #status = new Uint8Array(0);
  /** Interned reason + 1; 0 when none. */
  #reason = new Uint32Array(0);
  #agent = new Uint32Array(0);
  #input = new Float64Array(0);
  #output = new Float64Array(0);
  #cached = new Float64Array(0);
  #reasoning = new Float64Array(0);
  /** NaN: null. */
  #cost = new Float64Array(0);
  /** Epoch ms; NaN: null. */
  #started = new Float64Array(0);
  #ended = new Float64Array(0);
  readonly #strings: string[] = [];
  readonly #interned = new Map<string, number>();
  /** Sparse: what only some lines have, or what does not fit a column, by row. */
  readonly #agentIds = new Map<number, string>();
  readonly #parentIds = new Map<number, string>();
  readonly #usages = new Map<number, Usage>();
  readonly #inherited = new Map<number, InheritedSpend>();
  readonly #replay = new Map<number, ReplayCounts>();
  readonly #times = new Map<number, { startedAt: string | null; endedAt: string }>();
  /** Scores as JSON, by row: only each plan entry's latest line keeps them. */
  readonly #scores = new Map<number, string>();
  readonly #latestRow = new Map<number, number>();

  /** `idPrefix`: the plan's, so a plan entry's agent id need not be kept (see agentIdFor). */
  constructor(idPrefix: string, lines: Iterable<SummaryLine> = []) {
    this.#idPrefix = idPrefix;
    for (const line of lines) this.add(line);
  }

  /** Lines held. */
  get size(): number {
    return this.#size;
  }

  /** Keeps what the summary needs of `line` (a SummaryLine or a whole ResultLine). */
  add(line: SummaryLine): void {
    if (this.#size === this.#capacity) this.#grow();
    const row = this.#size;
    this.#size += 1;
    this.#index[row] = line.index ?? NO_INDEX;
    this.#attempt[row] = line.attempt;
    if (line.index === null || line.agentId !== agentIdFor(this.#idPrefix, line.index, line.attempt))
      this.#agentIds.set(row, line.agentId);
    if (line.parentId !== null) this.#parentIds.set(row, line.parentId);
    this.#agent[row] = this.#intern(line.agent);
    this.#status[row] = line.status === 'completed' ? 0 : 1;
    this.#reason[row] = line.reason === undefined ? 0 : this.#intern(line.reason) + 1;
    const usage = line.usage;
    this.#input[row] = usage.inputTokens;
    this.#output[row] = usage.outputTokens;
    this.#cached[row] = usage.cachedInputTokens;
    this.#reasoning[row] = usage.reasoningTokens;
    if (Object.keys(usage).length !== 4) this.#usages.set(row, usage);
    this.#cost[row] = line.costUsd ?? Number.NaN;
    if (line.inherited !== undefined) this.#inherited.set(row, line.inherited);
    this.#rounds[row] = line.rounds;
    this.#steps[row] = line.steps ?? NO_STEPS;
    const started = line.startedAt === null ? Number.NaN : Date.parse(line.startedAt);
    const ended = Date.parse(line.endedAt);
    if (isoTime(started) === line.startedAt && isoTime(ended) === line.endedAt) {
      this.#started[row] = started;
      this.#ended[row] = ended;
    } else this.#times.set(row, { startedAt: line.startedAt, endedAt: line.endedAt });
    if (line.replay !== undefined) this.#replay.set(row, line.replay);
    if (line.index !== null) {
      const earlier = this.#latestRow.get(line.index);
      if (earlier !== undefined) this.#scores.delete(earlier);
      this.#latestRow.set(line.index, row);
    }
    if (line.scores !== undefined) this.#scores.set(row, JSON.stringify(line.scores));
  }

  /** Every line, in the order they were added (a superseded attempt without its scores). */
  *[Symbol.iterator](): Iterator<SummaryLine> {
    for (let row = 0; row < this.#size; row += 1) yield this.#line(row);
  }

  /**
   * What `troupe resume` needs of every line, in order, as smaller objects than the lines (made
   * as each is reached, on every iteration).
   */
  resumeLines(): Iterable<ResumeLine> {
    return { [Symbol.iterator]: () => this.#resumeLines() };
  }

  *#resumeLines(): Generator<ResumeLine> {
    for (let row = 0; row < this.#size; row += 1) {
      const reason = this.#reasonOf(row);
      yield {
        index: this.#indexOf(row),
        agentId: this.#agentIdOf(row),
        attempt: this.#attempt[row] ?? 1,
        status: this.#status[row] === 0 ? 'completed' : 'failed',
        ...(reason === undefined ? {} : { reason }),
      };
    }
  }

  #line(row: number): SummaryLine {
    const reason = this.#reasonOf(row);
    const inherited = this.#inherited.get(row);
    const steps = this.#steps[row] ?? NO_STEPS;
    const scores = this.#scores.get(row);
    const replay = this.#replay.get(row);
    const cost = this.#cost[row] ?? Number.NaN;
    const times = this.#times.get(row);
    const started = this.#started[row] ?? Number.NaN;
    return {
      index: this.#indexOf(row),
      agentId: this.#agentIdOf(row),
      parentId: this.#parentIds.get(row) ?? null,
      agent: this.#strings[this.#agent[row] ?? 0] ?? '',
      attempt: this.#attempt[row] ?? 1,
      status: this.#status[row] === 0 ? 'completed' : 'failed',
      ...(reason === undefined ? {} : { reason }),
      usage: this.#usages.get(row) ?? {
        inputTokens: this.#input[row] ?? 0,
        outputTokens: this.#output[row] ?? 0,
        cachedInputTokens: this.#cached[row] ?? 0,
        reasoningTokens: this.#reasoning[row] ?? 0,
      },
      costUsd: Number.isNaN(cost) ? null : cost,
      ...(inherited === undefined ? {} : { inherited }),
      rounds: this.#rounds[row] ?? 0,
      ...(steps === NO_STEPS ? {} : { steps }),
      startedAt: times?.startedAt ?? (Number.isNaN(started) ? null : new Date(started).toISOString()),
      endedAt: times?.endedAt ?? new Date(this.#ended[row] ?? 0).toISOString(),
      ...(scores === undefined ? {} : { scores: JSON.parse(scores) as SummaryLine['scores'] }),
      ...(replay === undefined ? {} : { replay }),
    };
  }

  #indexOf(row: number): number | null {
    const index = this.#index[row] ?? NO_INDEX;
    return index === NO_INDEX ? null : index;
  }

  #agentIdOf(row: number): string {
    const index = this.#indexOf(row);
    return (
      this.#agentIds.get(row) ??
      (index === null ? '' : agentIdFor(this.#idPrefix, index, this.#attempt[row] ?? 1))
    );
  }

  #reasonOf(row: number): FailureReason | undefined {
    const reason = this.#reason[row] ?? 0;
    return reason === 0 ? undefined : (this.#strings[reason - 1] as FailureReason);
  }

  #intern(text: string): number {
    let id = this.#interned.get(text);
    if (id === undefined) {
      id = this.#strings.length;
      this.#strings.push(text);
      this.#interned.set(text, id);
    }
    return id;
  }

  #grow(): void {
    const capacity = Math.max(INITIAL_CAPACITY, this.#capacity * 2);
    this.#index = grown(this.#index, new Int32Array(capacity));
    this.#attempt = grown(this.#attempt, new Int32Array(capacity));
    this.#rounds = grown(this.#rounds, new Int32Array(capacity));
    this.#steps = grown(this.#steps, new Int32Array(capacity));
    this.#status = grown(this.#status, new Uint8Array(capacity));
    this.#reason = grown(this.#reason, new Uint32Array(capacity));
    this.#agent = grown(this.#agent, new Uint32Array(capacity));
    this.#input = grown(this.#input, new Float64Array(capacity));
    this.#output = grown(this.#output, new Float64Array(capacity));
    this.#cached = grown(this.#cached, new Float64Array(capacity));
    this.#reasoning = grown(this.#reasoning, new Float64Array(capacity));
    this.#cost = grown(this.#cost, new Float64Array(capacity));
    this.#started = grown(this.#started, new Float64Array(capacity));
    this.#ended = grown(this.#ended, new Float64Array(capacity));
    this.#capacity = capacity;
  }
}

function grown<T extends Int32Array | Uint8Array | Uint32Array | Float64Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}

/** `ms` as `toISOString` writes it; undefined when it is no time. */
function isoTime(ms: number): string | null | undefined {
  if (Number.isNaN(ms)) return null;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
