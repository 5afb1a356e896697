/** The mutable state of one agent run, shared by the loop's steps. */
import type { AgentDefinition } from '../definition/types.ts';
import { type AuditEventInput, type HistoryKind, inputHasher } from '../journal/events.ts';
import type { JournalSink } from '../journal/sink.ts';
import { addReceipt, type UsageTotals, ZERO_USAGE_TOTALS } from '../journal/usage.ts';
import type { Projection } from '../projection/projection.ts';
import type { Provider, Receipt } from '../providers/types.ts';
import type { Toolbox } from '../tools/toolbox.ts';
import type { ToolSpec } from '../tools/types.ts';

/** Everything a round needs, and what rounds change. */
export class RunContext {
  readonly agentId: string;
  readonly definition: AgentDefinition;
  readonly provider: Provider;
  readonly model: string;
  readonly system: string;
  readonly toolbox: Toolbox;
  readonly projection: Projection;
  readonly signal: AbortSignal;
  /** Input budget left for the render once the system prompt and tool schemas are counted. */
  readonly renderBudget: number;
  readonly #journal: JournalSink | undefined;
  readonly #observer: ((event: AuditEventInput) => void) | undefined;

  round = 0;
  roundsUsed = 0;
  totals: UsageTotals = ZERO_USAGE_TOTALS;
  instructionsReceived = 0;
  readonly succeededTools = new Set<string>();
  /** The accepted `complete_task` result, once there is one. */
  completion: { readonly value: unknown } | undefined;
  /** The call id of the tool call being executed (routed tools journal against it). */
  currentCallId = '';
  readonly startedAt = performance.now();

  constructor(init: {
    agentId: string;
    definition: AgentDefinition;
    provider: Provider;
    model: string;
    system: string;
    toolbox: Toolbox;
    projection: Projection;
    signal: AbortSignal;
    renderBudget: number;
    journal: JournalSink | undefined;
    observer: ((event: AuditEventInput) => void) | undefined;
  }) {
    this.agentId = init.agentId;
    this.definition = init.definition;
    this.provider = init.provider;
    this.model = init.model;
    this.system = init.system;
    this.toolbox = init.toolbox;
    this.projection = init.projection;
    this.signal = init.signal;
    this.renderBudget = init.renderBudget;
    this.#journal = init.journal;
    this.#observer = init.observer;
  }

  /** Records an audit event (journal first, then observers). */
  record(event: AuditEventInput): void {
    this.#journal?.append(event);
    this.#observer?.(event);
  }

  /** Pushes a history entry to the projection and journals it. */
  pushHistory(text: string, kind: HistoryKind, displayedKeys: readonly string[] = [], callId?: string): void {
    this.projection.pushHistory(text, displayedKeys);
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

  readonly #hashers = new Map<readonly ToolSpec[], (input: string) => string>();

  /** {@link hashInput} of a round's exact provider input, with the fixed parts prepared once. */
  hashInput(input: string, tools: readonly ToolSpec[]): string {
    let hasher = this.#hashers.get(tools);
    if (!hasher) {
      hasher = inputHasher(this.system, tools);
      this.#hashers.set(tools, hasher);
    }
    return hasher(input);
  }

  /** Tool specs offered in a normal round. */
  get specs(): readonly ToolSpec[] {
    return this.toolbox.specs;
  }
}
