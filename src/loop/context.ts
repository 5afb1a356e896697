/** The mutable state of one agent run, shared by the loop's steps. */
import type { AgentDefinition } from '../definition/types.ts';
import { type AuditEventInput, type HistoryKind, inputHasher } from '../journal/events.ts';
import type { JournalSink } from '../journal/sink.ts';
import { addReceipt, type UsageTotals, ZERO_USAGE_TOTALS } from '../journal/usage.ts';
import type { Projection } from '../projection/projection.ts';
import type { TokenCounter } from '../projection/token-counter.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { ModelPrice } from '../providers/pricing.ts';
import type { Provider, Receipt } from '../providers/types.ts';
import type { ReplayCalls } from '../replay/replay-calls.ts';
import type { Toolbox } from '../tools/toolbox.ts';
import type { ToolSpec } from '../tools/types.ts';
import type { ApprovalSettings } from './approvals.ts';
import { countFixed } from './fixed-tokens.ts';
import type { ResolvedLimits } from './limits.ts';
import type { SessionState } from './session.ts';
import type { LoopProgress, StopCondition } from './stop-conditions.ts';
import type { AgentChannels } from './types.ts';

type InputHash = (input: string, continuation?: readonly string[]) => string;

/** Everything a round needs, and what rounds change. */
export class RunContext {
  readonly agentId: string;
  readonly definition: AgentDefinition;
  readonly provider: Provider;
  readonly model: string;
  /** Sent with every model request of the agent (resolved once, pinned for its life). */
  readonly modelSettings: ModelSettings;
  readonly system: string;
  readonly toolbox: Toolbox;
  readonly projection: Projection;
  /**
   * Aborts on cancellation and when `wallClockMs` passes (see {@link RunContext.timedOut}); during
   * a session's turn, also when that turn is cancelled (src/loop/session.ts sets it per turn).
   */
  signal: AbortSignal;
  /** Input budget left for the render once the system prompt and tool schemas are counted. */
  readonly renderBudget: number;
  readonly limits: ResolvedLimits;
  /** Limits, then the caller's conditions: checked before every model request. */
  readonly conditions: readonly StopCondition[];
  /** Counts input and output when a server reports no usage. */
  readonly usageCounter: TokenCounter;
  /** {@link fixedUsageTokens}, once known. */
  #fixedUsageTokens: number | undefined;
  /** The model's price, when the provider knows it. */
  readonly price: ModelPrice | undefined;
  /** Set when the agent replays a recording: decides its tool calls (src/replay/replay-calls.ts). */
  readonly replay: ReplayCalls | undefined;
  /** Set when the agent is a session: where it stands (src/loop/session.ts). */
  readonly session: SessionState | undefined;
  /** Where calls that ask wait for a decision (undefined: asks are denied). */
  readonly approvalChannel: AgentChannels['requestApproval'];
  /** Runs a tool call in its span's trace context (see `AgentChannels.inToolSpan`). */
  readonly inToolSpan: AgentChannels['inToolSpan'];
  readonly approvalSettings: ApprovalSettings;
  readonly #journal: JournalSink | undefined;
  readonly #observer: ((event: AuditEventInput) => void) | undefined;

  /** True once `wallClockMs` passed: the signal then aborted because of the time limit. */
  timedOut = false;
  round = 0;
  roundsUsed = 0;
  /** Model requests sent (or about to be sent): what `maxSteps` counts. */
  stepsUsed = 0;
  totals: UsageTotals = ZERO_USAGE_TOTALS;
  instructionsReceived = 0;
  /** ApprovalRequested events so far (request ids are numbered by it). */
  approvalsRequested = 0;
  /** Answers cut off by the output limit in a row. */
  truncations = 0;
  readonly succeededTools = new Set<string>();
  /** The accepted `complete_task` result, once there is one. */
  completion: { readonly value: unknown } | undefined;
  /** The call id of the tool call being executed (routed tools journal against it). */
  currentCallId = '';
  /**
   * History entries pushed since the current round's first request: the continuation a later
   * request of the round carries (see `hashContinuation`).
   */
  roundEntries: string[] = [];
  readonly startedAt = performance.now();

  constructor(init: {
    agentId: string;
    definition: AgentDefinition;
    provider: Provider;
    model: string;
    modelSettings: ModelSettings;
    system: string;
    toolbox: Toolbox;
    projection: Projection;
    signal: AbortSignal;
    renderBudget: number;
    limits: ResolvedLimits;
    conditions: readonly StopCondition[];
    usageCounter: TokenCounter;
    /** @default counted with `usageCounter` when first needed */
    fixedUsageTokens?: number;
    price: ModelPrice | undefined;
    replay?: ReplayCalls | undefined;
    session?: SessionState | undefined;
    approvalChannel?: AgentChannels['requestApproval'];
    inToolSpan?: AgentChannels['inToolSpan'];
    approvalSettings: ApprovalSettings;
    journal: JournalSink | undefined;
    observer: ((event: AuditEventInput) => void) | undefined;
  }) {
    this.agentId = init.agentId;
    this.definition = init.definition;
    this.provider = init.provider;
    this.model = init.model;
    this.modelSettings = init.modelSettings;
    this.system = init.system;
    this.toolbox = init.toolbox;
    this.projection = init.projection;
    this.signal = init.signal;
    this.renderBudget = init.renderBudget;
    this.limits = init.limits;
    this.conditions = init.conditions;
    this.usageCounter = init.usageCounter;
    this.#fixedUsageTokens = init.fixedUsageTokens;
    this.price = init.price;
    this.replay = init.replay;
    this.session = init.session;
    this.approvalChannel = init.approvalChannel;
    this.inToolSpan = init.inToolSpan;
    this.approvalSettings = init.approvalSettings;
    this.#journal = init.journal;
    this.#observer = init.observer;
  }

  /**
   * Tokens of the system prompt and tool schemas, counted with {@link usageCounter}. Counted when
   * first needed (a request whose usage the server did not report): when every server reports
   * usage, a thread never loads a BPE tokenizer (its tables are megabytes) for it.
   */
  get fixedUsageTokens(): number {
    this.#fixedUsageTokens ??=
      countFixed(this.usageCounter, this.system) +
      countFixed(this.usageCounter, JSON.stringify(this.toolbox.specs));
    return this.#fixedUsageTokens;
  }

  /**
   * Tells the observers about an event without journalling it: a resumed session repeats an
   * answer its journal already holds.
   */
  announce(event: AuditEventInput): void {
    this.#observer?.(event);
  }

  /** Records an audit event (journal first, then observers). */
  record(event: AuditEventInput): void {
    this.#journal?.append(event);
    this.#observer?.(event);
  }

  /**
   * Makes every event recorded so far reach the journal's store before a side effect: a batching
   * journal writes what it holds (see `JournalSink.commit`).
   */
  commitJournal(): void {
    this.#journal?.commit?.();
  }

  /** Resolves once every event recorded so far is stored (at once for synchronous journals). */
  async journalFlushed(): Promise<void> {
    this.#journal?.commit?.();
    await this.#journal?.flushed?.();
  }

  /** Pushes a history entry to the projection and journals it. */
  pushHistory(text: string, kind: HistoryKind, displayedKeys: readonly string[] = [], callId?: string): void {
    this.projection.pushHistory(text, displayedKeys);
    this.roundEntries.push(text);
    this.record({
      type: 'HistoryAppended',
      agentId: this.agentId,
      round: this.round,
      text,
      displayedKeys,
      kind,
      ...(callId === undefined ? {} : { callId }),
    });
  }

  /** The accepted `complete_task` result (a call, so control-flow narrowing does not go stale). */
  acceptedCompletion(): { readonly value: unknown } | undefined {
    return this.completion;
  }

  addReceipt(receipt: Receipt): void {
    this.totals = addReceipt(this.totals, receipt);
  }

  get totalTokens(): number {
    return this.totals.usage.inputTokens + this.totals.usage.outputTokens;
  }

  /** What the stop conditions see now. */
  progress(): LoopProgress {
    return {
      stepsUsed: this.stepsUsed,
      roundsUsed: this.roundsUsed,
      totalTokens: this.totalTokens,
      costUsd: this.totals.costUsd,
      elapsedMs: performance.now() - this.startedAt,
      succeededTools: this.succeededTools,
    };
  }

  /** Hashers by offered tools: usually the run's specs only, so the first is kept apart. */
  #hasher: { readonly tools: readonly ToolSpec[]; readonly hash: InputHash } | undefined;
  #hashers: Map<readonly ToolSpec[], InputHash> | undefined;

  /**
   * The SHA-256 a model request is journalled under: `hashInput` of the round's render, or
   * `hashContinuation` with the entries added since, with the fixed parts prepared once.
   */
  hashInput(input: string, tools: readonly ToolSpec[], continuation?: readonly string[]): string {
    if (this.#hasher === undefined) {
      this.#hasher = { tools, hash: inputHasher(this.system, tools, this.modelSettings) };
    }
    if (this.#hasher.tools === tools) return this.#hasher.hash(input, continuation);
    this.#hashers ??= new Map();
    let hasher = this.#hashers.get(tools);
    if (!hasher) {
      hasher = inputHasher(this.system, tools, this.modelSettings);
      this.#hashers.set(tools, hasher);
    }
    return hasher(input, continuation);
  }

  /** Tool specs offered in a normal round. */
  get specs(): readonly ToolSpec[] {
    return this.toolbox.specs;
  }
}
