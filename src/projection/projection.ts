/**
 * The projection: everything an agent sees, re-rendered afresh for every model round.
 *
 * Render = context sections, the task, the history entries, then every current state that no
 * history entry displays (in state order: the most recently updated last). Empty sections are
 * dropped; the rest are joined by one blank line. An update to state K turns every earlier entry
 * displaying K into SUPERSEDED_MARKER (REMOVED_MARKER for a removal), and K's new value moves to the
 * end. Budget questions ("would this fit?") are answered from an incremental ledger, never from a
 * render.
 */
import { PROTOCOL_TOKEN_RESERVE, REMOVED_MARKER, SUPERSEDED_MARKER } from '../constants.ts';
import { describeValue, UserError } from '../errors.ts';
import type { StateUpdate } from '../tools/types.ts';
import { PROJECTION_SNAPSHOT_VERSION, RESULT_NOT_FITTED_TEXT, SECTION_SEPARATOR } from './constants.ts';
import { createLedger, type TokenLedger } from './ledger.ts';
import { SectionList, SectionNode, type SectionText } from './section-list.ts';
import { parseProjectionSnapshot } from './snapshot.ts';
import { heuristicCounter, type TokenCounter } from './token-counter.ts';
import type {
  ProjectionChange,
  ProjectionInit,
  ProjectionOptions,
  ProjectionSnapshot,
  TokenEstimate,
  ToolResultAdmission,
  ToolResultInput,
  ToolResultOptions,
} from './types.ts';
import { UndoLog } from './undo-log.ts';

interface HistoryEntry {
  readonly node: SectionNode;
  /** Keys this entry displays; emptied when the entry is superseded. */
  displays: ReadonlySet<string>;
}

const NO_KEYS: ReadonlySet<string> = new Set();

function invalid(code: string, path: string, expected: string, found: unknown): never {
  throw new UserError(code, `Expected \`${path}\` to be ${expected}, got ${describeValue(found)}`, { path });
}

function checkMaxInputTokens(value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    invalid('invalid_option', 'maxInputTokens', 'a positive number', value);
  }
}

function badChange(path: string, expected: string, found: unknown): never {
  return invalid('invalid_projection_change', path, expected, found);
}

/** Checked at the boundary: changes come from tools, which are user code. */
function checkChange(change: ProjectionChange): void {
  if (typeof change !== 'object' || change === null) badChange('change', 'an object', change);
  const { text, ok, stateUpdates, displayedStateKeys } = change;
  if (text !== undefined && typeof text !== 'string') badChange('text', 'a string', text);
  if (ok !== undefined && typeof ok !== 'boolean') badChange('ok', 'a boolean', ok);
  if (stateUpdates !== undefined) {
    if (!Array.isArray(stateUpdates)) badChange('stateUpdates', 'an array', stateUpdates);
    stateUpdates.forEach((update: StateUpdate | null, i) => {
      if (typeof update?.key !== 'string') badChange(`stateUpdates[${i}].key`, 'a string', update?.key);
      if (update.text !== null && typeof update.text !== 'string') {
        badChange(`stateUpdates[${i}].text`, 'a string or null', update.text);
      }
    });
  }
  if (displayedStateKeys !== undefined) {
    if (!Array.isArray(displayedStateKeys)) badChange('displayedStateKeys', 'an array', displayedStateKeys);
    displayedStateKeys.forEach((key: unknown, i) => {
      if (typeof key !== 'string') badChange(`displayedStateKeys[${i}]`, 'a string', key);
    });
  }
}

/** An agent's input, rebuilt for every round, with an exact incremental token budget. */
export class Projection {
  readonly #undo = new UndoLog();
  readonly #ledger: TokenLedger;
  readonly #list: SectionList;
  readonly #reserveTokens: number;
  readonly #calibration: ProjectionOptions['calibration'];
  readonly #context: readonly string[];
  readonly #task: string;
  readonly #history: HistoryEntry[] = [];
  // Created on first use: many agents never display or update a state.
  #displayedBy: Map<string, Set<HistoryEntry>> | undefined;
  #states: Map<string, SectionNode> | undefined;
  /** Hidden sentinel between history and states: entries are inserted before it. */
  readonly #statesStart: SectionNode;
  /** Measured when first needed (most agents never supersede anything), then shared. */
  #supersededMarker: SectionText | undefined;
  /** The last render (see {@link render}). */
  #rendered: string | undefined;
  #removedMarker: SectionText | undefined;

  constructor(init: ProjectionInit = {}) {
    const reserve = init.reserveTokens ?? PROTOCOL_TOKEN_RESERVE;
    if (!Number.isInteger(reserve) || reserve < 0) {
      invalid('invalid_option', 'reserveTokens', 'a non-negative integer', reserve);
    }
    const context = init.context ?? [];
    if (!Array.isArray(context)) invalid('invalid_option', 'context', 'an array of strings', context);
    context.forEach((section: unknown, i) => {
      if (typeof section !== 'string') invalid('invalid_option', `context[${i}]`, 'a string', section);
    });
    const task = init.task ?? '';
    if (typeof task !== 'string') invalid('invalid_option', 'task', 'a string', task);
    const counter = init.counter ?? heuristicCounter;
    if (typeof counter?.count !== 'function') invalid('invalid_option', 'counter', 'a TokenCounter', counter);

    this.#reserveTokens = reserve;
    this.#calibration = init.calibration;
    this.#context = Object.freeze([...context]);
    this.#task = task;
    this.#ledger = createLedger(counter, this.#undo);
    this.#list = new SectionList(this.#ledger, this.#undo);
    for (const section of [...this.#context, task]) {
      this.#list.insertBefore(new SectionNode(this.#ledger.measure(section)), undefined);
    }
    this.#statesStart = new SectionNode(this.#ledger.measure(''), { hidden: true });
    this.#list.insertBefore(this.#statesStart, undefined);
  }

  /**
   * Rebuilds a projection from `snapshot()` output (typically parsed back from JSON). Throws
   * `SystemError` `invalid_projection_snapshot` when it is malformed.
   */
  static fromSnapshot(snapshot: unknown, options: ProjectionOptions = {}): Projection {
    const checked = parseProjectionSnapshot(snapshot);
    const projection = new Projection({ ...options, context: checked.context, task: checked.task });
    projection.#restore(checked);
    return projection;
  }

  /** The context sections. */
  get context(): readonly string[] {
    return this.#context;
  }

  get task(): string {
    return this.#task;
  }

  get counter(): TokenCounter {
    return this.#ledger.counter;
  }

  get reserveTokens(): number {
    return this.#reserveTokens;
  }

  /** Number of history entries (superseded ones included). */
  get historyLength(): number {
    return this.#history.length;
  }

  /** The current text of state `key`, or undefined when there is no such state. */
  state(key: string): string | undefined {
    return this.#states?.get(key)?.text.text;
  }

  /** Current state keys in state order (the most recently updated last). */
  stateKeys(): string[] {
    const keys: string[] = [];
    for (let node = this.#statesStart.next; node !== undefined; node = node.next) {
      if (node.key !== undefined) keys.push(node.key);
    }
    return keys;
  }

  /**
   * The provider input: non-empty sections joined by one blank line. O(size of the render), or
   * O(what was added) when sections were only added at its end since the previous render: every
   * request of a round renders again (its usage estimate counts the render), and a round mostly
   * appends history.
   */
  render(): string {
    const appended = this.#list.takeAppended();
    const previous = this.#rendered;
    let text: string;
    if (previous === undefined || appended === undefined) {
      text = this.#list.visibleTexts().join(SECTION_SEPARATOR);
    } else if (appended.length === 0) {
      text = previous;
    } else {
      const added = appended.join(SECTION_SEPARATOR);
      text = previous === '' ? added : `${previous}${SECTION_SEPARATOR}${added}`;
    }
    this.#rendered = text;
    return text;
  }

  /** Adds a history entry that displays `displayedStateKeys`. */
  pushHistory(text: string, displayedStateKeys: readonly string[] = []): void {
    this.apply({ text, displayedStateKeys });
  }

  /** Applies state updates: supersedes earlier displays, replaces or removes states, moves them last. */
  applyUpdates(updates: readonly StateUpdate[]): void {
    this.apply({ stateUpdates: updates });
  }

  /** Applies a change: its state updates (only when `ok` is not false), then its entry. */
  apply(change: ProjectionChange): void {
    checkChange(change);
    this.#apply(change);
  }

  /**
   * Adds a tool result. With `maxInputTokens`, a result that would push the estimate over it is not
   * added: the not-fitted text is added instead, no state changes, and `accepted` is false (the
   * caller still journals the exact result).
   */
  addToolResult(result: ToolResultInput, options: ToolResultOptions = {}): ToolResultAdmission {
    checkChange(result);
    const { maxInputTokens } = options;
    if (maxInputTokens === undefined) {
      this.#apply(result);
      return { accepted: true, candidateTokens: this.estimatedTokens() };
    }
    checkMaxInputTokens(maxInputTokens);
    const candidateTokens = this.#undo.trial(() => this.#estimateAfter(result));
    if (candidateTokens <= maxInputTokens) {
      this.#apply(result);
      return { accepted: true, candidateTokens };
    }
    this.#apply({ text: options.notFittedText ?? RESULT_NOT_FITTED_TEXT });
    return { accepted: false, candidateTokens };
  }

  /** Exact counter.count(render()), without rendering. */
  renderTokens(): number {
    return this.#ledger.total(this.#list);
  }

  /** The estimate and its parts. */
  tokenEstimate(): TokenEstimate {
    const renderTokens = this.renderTokens();
    const rawTokens = renderTokens + this.#reserveTokens;
    const calibration = this.#calibration;
    const estimatedTokens =
      calibration === undefined ? rawTokens : calibration.calibrator.adjust(calibration.model, rawTokens);
    return { renderTokens, reserveTokens: this.#reserveTokens, rawTokens, estimatedTokens };
  }

  /** Estimated input tokens: counter(render) + reserve, calibrated when a calibrator is set. */
  estimatedTokens(): number {
    return this.tokenEstimate().estimatedTokens;
  }

  /** True when the estimate is at most `maxInputTokens`. */
  fits(maxInputTokens: number): boolean {
    checkMaxInputTokens(maxInputTokens);
    return this.estimatedTokens() <= maxInputTokens;
  }

  /** The estimate `change` would lead to. Changes nothing and renders nothing. */
  withCandidate(change: ProjectionChange): number {
    checkChange(change);
    return this.#undo.trial(() => this.#estimateAfter(change));
  }

  /** True when the projection would fit `maxInputTokens` after `change`. Changes nothing. */
  fitsCandidate(change: ProjectionChange, maxInputTokens: number): boolean {
    checkMaxInputTokens(maxInputTokens);
    return this.withCandidate(change) <= maxInputTokens;
  }

  /** True when setting (or, with null, removing) state `key` would fit. Changes nothing. */
  fitsState(key: string, text: string | null, maxInputTokens: number): boolean {
    return this.fitsCandidate({ stateUpdates: [{ key, text }] }, maxInputTokens);
  }

  /** The projection as plain JSON; `Projection.fromSnapshot` rebuilds it exactly. */
  snapshot(): ProjectionSnapshot {
    const states: { key: string; text: string }[] = [];
    for (let node = this.#statesStart.next; node !== undefined; node = node.next) {
      if (node.key !== undefined) states.push({ key: node.key, text: node.text.text });
    }
    return {
      version: PROJECTION_SNAPSHOT_VERSION,
      context: [...this.#context],
      task: this.#task,
      history: this.#history.map((entry) => ({
        text: entry.node.text.text,
        displayedStateKeys: [...entry.displays],
      })),
      states,
    };
  }

  #estimateAfter(change: ProjectionChange): number {
    this.#apply(change);
    return this.estimatedTokens();
  }

  #apply(change: ProjectionChange): void {
    const ok = change.ok !== false;
    if (ok) for (const update of change.stateUpdates ?? []) this.#applyUpdate(update);
    if (change.text !== undefined) this.#push(change.text, ok ? (change.displayedStateKeys ?? []) : []);
  }

  #stateMap(): Map<string, SectionNode> {
    this.#states ??= new Map();
    return this.#states;
  }

  #displayMap(): Map<string, Set<HistoryEntry>> {
    this.#displayedBy ??= new Map();
    return this.#displayedBy;
  }

  // Measured once: superseding an entry then counts no text (with a BPE counter, only its seams).
  #superseded(): SectionText {
    this.#supersededMarker ??= this.#ledger.measure(SUPERSEDED_MARKER);
    return this.#supersededMarker;
  }

  #removed(): SectionText {
    this.#removedMarker ??= this.#ledger.measure(REMOVED_MARKER);
    return this.#removedMarker;
  }

  #applyUpdate({ key, text }: StateUpdate): void {
    const entries = this.#displayedBy?.get(key);
    if (entries !== undefined) {
      const marker = text === null ? this.#removed() : this.#superseded();
      for (const entry of [...entries]) this.#supersede(entry, marker);
    }
    const previous = this.#states?.get(key);
    if (previous !== undefined) {
      this.#list.remove(previous);
      this.#undo.mapDelete(this.#stateMap(), key);
    }
    if (text === null) return;
    // Nothing displays `key` any more (its displays were just superseded): the node is visible.
    const node = new SectionNode(this.#ledger.measure(text), { key });
    this.#list.insertBefore(node, undefined);
    this.#undo.mapSet(this.#stateMap(), key, node);
  }

  /**
   * Replaces an entry by `marker`. The entry stops displaying every key it displayed, not only the
   * updated one: a marker shows none of them, and a state nobody displays is rendered after the
   * history, so each current state stays in the render exactly once.
   */
  #supersede(entry: HistoryEntry, marker: SectionText): void {
    this.#list.setText(entry.node, marker);
    const keys = entry.displays;
    this.#undo.assign(entry, 'displays', NO_KEYS);
    for (const key of keys) {
      const entries = this.#displayedBy?.get(key);
      if (entries === undefined) continue;
      this.#undo.setDelete(entries, entry);
      if (entries.size > 0) continue;
      this.#undo.mapDelete(this.#displayMap(), key);
      const state = this.#states?.get(key);
      if (state !== undefined) this.#list.setHidden(state, false);
    }
  }

  #push(text: string, displayedStateKeys: readonly string[]): void {
    const node = new SectionNode(this.#ledger.measure(text));
    this.#list.insertBefore(node, this.#statesStart);
    const entry: HistoryEntry = {
      node,
      displays: displayedStateKeys.length === 0 ? NO_KEYS : new Set(displayedStateKeys),
    };
    this.#undo.push(this.#history, entry);
    for (const key of entry.displays) {
      let entries = this.#displayedBy?.get(key);
      if (entries === undefined) {
        entries = new Set();
        this.#undo.mapSet(this.#displayMap(), key, entries);
      }
      this.#undo.setAdd(entries, entry);
      const state = this.#states?.get(key);
      if (state !== undefined) this.#list.setHidden(state, true);
    }
  }

  #restore(snapshot: ProjectionSnapshot): void {
    for (const { key, text } of snapshot.states) {
      const node = new SectionNode(this.#ledger.measure(text), { key });
      this.#list.insertBefore(node, undefined);
      this.#stateMap().set(key, node);
    }
    for (const entry of snapshot.history) this.#push(entry.text, entry.displayedStateKeys);
  }
}
