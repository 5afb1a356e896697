/**
 * The render as a linked list of sections, in render order: context, task, history, then states.
 * Every section keeps its node for life; a state that a history entry displays stays in the list,
 * hidden, so it reappears in its place when that entry stops displaying it. The list tells its
 * ledger about every change, so the token count follows in O(size of the change).
 */
import type { TokenLedger } from './ledger.ts';
import type { PieceSplit } from './piece-ledger.ts';
import type { UndoLog } from './undo-log.ts';

/** A section text with what the ledger needs to count it, measured once and shareable (markers). */
export interface SectionText {
  readonly text: string;
  /** Unicode code points; filled in by the code-point ledger only. */
  readonly codePoints: number;
  /** Seams and interior count; filled in by the piece ledger for texts that have a safe cut. */
  readonly split: PieceSplit | undefined;
}

/** One section of the render. */
export class SectionNode {
  prev: SectionNode | undefined;
  next: SectionNode | undefined;
  linked = false;
  text: SectionText;
  /** A state section displayed by a history entry, or a sentinel: not rendered. */
  hidden: boolean;
  /** Set on state sections. */
  readonly key: string | undefined;
  /** Owned by the piece ledger: tokens of the seam that ends at this section's first safe cut. */
  glue = 0;

  constructor(text: SectionText, options: { hidden?: boolean; key?: string } = {}) {
    this.text = text;
    this.hidden = options.hidden ?? false;
    this.key = options.key;
  }

  /** Part of the render: linked, not hidden, not empty. */
  get visible(): boolean {
    return this.linked && !this.hidden && this.text.text !== '';
  }
}

/** The ordered sections of a render, with undo support for trial changes. */
export class SectionList {
  #first: SectionNode | undefined;
  #last: SectionNode | undefined;
  readonly #ledger: TokenLedger;
  readonly #undo: UndoLog;
  /**
   * Sections that became visible at the end of the render since the last {@link takeAppended}, in
   * order; undefined once anything else changed the render.
   */
  #appended: SectionNode[] | undefined;
  readonly #forgetAppended = (): void => {
    this.#appended = undefined;
  };

  constructor(ledger: TokenLedger, undo: UndoLog) {
    this.#ledger = ledger;
    this.#undo = undo;
  }

  get first(): SectionNode | undefined {
    return this.#first;
  }

  get last(): SectionNode | undefined {
    return this.#last;
  }

  /** Links `node` before `ref`, or at the end when `ref` is undefined. */
  insertBefore(node: SectionNode, ref: SectionNode | undefined): void {
    this.#link(node, ref);
    this.#undo.record(() => {
      this.#unlink(node);
      // A trial's append (every tool result's fit check makes one) is taken back, newest first.
      if (this.#appended?.at(-1) === node) this.#appended.pop();
      else this.#appended = undefined;
    });
    this.#ledger.afterChange(this, node, node.next);
    if (this.#appended !== undefined && node.visible) {
      if (visibleAfter(node)) this.#appended = undefined;
      else this.#appended.push(node);
    }
  }

  /** Unlinks `node`. */
  remove(node: SectionNode): void {
    this.#changed();
    this.#ledger.beforeChange(node);
    const following = node.next;
    this.#unlink(node);
    this.#undo.record(() => this.#link(node, following));
    this.#ledger.afterChange(this, node, following);
  }

  /** Replaces the text of `node`. */
  setText(node: SectionNode, text: SectionText): void {
    if (node.text === text) return;
    this.#changed();
    this.#ledger.beforeChange(node);
    this.#undo.assign(node, 'text', text);
    this.#ledger.afterChange(this, node, node.next);
  }

  /** Hides or shows `node`. */
  setHidden(node: SectionNode, hidden: boolean): void {
    if (node.hidden === hidden) return;
    this.#changed();
    this.#ledger.beforeChange(node);
    this.#undo.assign(node, 'hidden', hidden);
    this.#ledger.afterChange(this, node, node.next);
  }

  /** The visible texts, in render order. */
  visibleTexts(): string[] {
    const texts: string[] = [];
    for (let node = this.#first; node !== undefined; node = node.next) {
      if (node.visible) texts.push(node.text.text);
    }
    return texts;
  }

  /**
   * The texts that became visible at the end of the render since the previous call, in order, or
   * undefined when the render changed in another way meanwhile (or this is the first call): the
   * render is then the previous one followed by these texts.
   */
  takeAppended(): string[] | undefined {
    const appended = this.#appended;
    this.#appended = [];
    if (appended === undefined) return undefined;
    // Pushed, not map()ped: an optimized map() returns a holey array where the interpreter's is
    // packed, and its consumers' optimized code deopted on it.
    const texts: string[] = [];
    for (const node of appended) texts.push(node.text.text);
    return texts;
  }

  /** A change other than an append at the end: the render must be rebuilt. */
  #changed(): void {
    this.#appended = undefined;
    // Rolling the change back is not an append either.
    this.#undo.record(this.#forgetAppended);
  }

  #link(node: SectionNode, ref: SectionNode | undefined): void {
    const prev = ref === undefined ? this.#last : ref.prev;
    node.prev = prev;
    node.next = ref;
    if (prev === undefined) this.#first = node;
    else prev.next = node;
    if (ref === undefined) this.#last = node;
    else ref.prev = node;
    node.linked = true;
  }

  #unlink(node: SectionNode): void {
    const { prev, next } = node;
    if (prev === undefined) this.#first = next;
    else prev.next = next;
    if (next === undefined) this.#last = prev;
    else next.prev = prev;
    node.prev = undefined;
    node.next = undefined;
    node.linked = false;
  }
}

/** Whether a visible section follows `node`. */
function visibleAfter(node: SectionNode): boolean {
  for (let next = node.next; next !== undefined; next = next.next) if (next.visible) return true;
  return false;
}
