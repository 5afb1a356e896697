/**
 * Token ledgers: the exact token count of a projection's render, kept up to date change by change so
 * that budget checks never render. One ledger per kind of counter:
 *
 * - heuristic: ceil(code points / 4) of the render is not the sum of per-section ceilings, so the
 *   ledger sums code points (separators included, counted arithmetically) and divides once.
 * - BPE (o200k, cl100k): exact seams at safe cuts, see piece-ledger.ts.
 * - any other counter: nothing is known about how its counts compose, so the ledger re-counts the
 *   render when asked after a change. Exact, but O(render) per question.
 */
import { HEURISTIC_CHARS_PER_TOKEN, SECTION_SEPARATOR } from './constants.ts';
import { PieceLedger } from './piece-ledger.ts';
import type { SectionList, SectionNode, SectionText } from './section-list.ts';
import { BpeCounter, countCodePoints, HeuristicCounter, type TokenCounter } from './token-counter.ts';
import type { UndoLog } from './undo-log.ts';

/** Keeps the token count of a section list. The list calls it around every change. */
export interface TokenLedger {
  readonly counter: TokenCounter;
  /** Measures a text for this ledger; the result may be shared by many sections. */
  measure(text: string): SectionText;
  /** Before `node`'s text or visibility changes, or before it is unlinked. */
  beforeChange(node: SectionNode): void;
  /** After `node` changed or was linked or unlinked; `following` is the node after its position. */
  afterChange(list: SectionList, node: SectionNode, following: SectionNode | undefined): void;
  /** counter.count(render), exactly. */
  total(list: SectionList): number;
}

const SEPARATOR_CODE_POINTS = countCodePoints(SECTION_SEPARATOR);

/** For the heuristic counter: code points of visible sections plus separators, divided once. */
export class CodepointLedger implements TokenLedger {
  readonly counter: TokenCounter;
  readonly #undo: UndoLog;
  readonly #tally = { codePoints: 0, sections: 0 };

  constructor(counter: TokenCounter, undo: UndoLog) {
    this.counter = counter;
    this.#undo = undo;
  }

  measure(text: string): SectionText {
    return { text, codePoints: countCodePoints(text), split: undefined };
  }

  beforeChange(node: SectionNode): void {
    if (node.visible) this.#add(-node.text.codePoints, -1);
  }

  afterChange(_list: SectionList, node: SectionNode): void {
    if (node.visible) this.#add(node.text.codePoints, 1);
  }

  total(): number {
    const { codePoints, sections } = this.#tally;
    if (sections === 0) return 0;
    return Math.ceil((codePoints + SEPARATOR_CODE_POINTS * (sections - 1)) / HEURISTIC_CHARS_PER_TOKEN);
  }

  #add(codePoints: number, sections: number): void {
    this.#undo.assign(this.#tally, 'codePoints', this.#tally.codePoints + codePoints);
    this.#undo.assign(this.#tally, 'sections', this.#tally.sections + sections);
  }
}

/** For counters of unknown composition: counts the whole render, once per change. */
export class RecountLedger implements TokenLedger {
  readonly counter: TokenCounter;
  readonly #undo: UndoLog;
  readonly #cache: { total: number | undefined } = { total: undefined };

  constructor(counter: TokenCounter, undo: UndoLog) {
    this.counter = counter;
    this.#undo = undo;
  }

  measure(text: string): SectionText {
    return { text, codePoints: 0, split: undefined };
  }

  beforeChange(): void {}

  afterChange(): void {
    if (this.#cache.total !== undefined) this.#undo.assign(this.#cache, 'total', undefined);
  }

  total(list: SectionList): number {
    let total = this.#cache.total;
    if (total === undefined) {
      total = this.counter.count(list.visibleTexts().join(SECTION_SEPARATOR));
      // Recorded so that a count taken inside a trial does not outlive the trial.
      this.#undo.assign(this.#cache, 'total', total);
    }
    return total;
  }
}

/** The exact ledger that suits `counter`. */
export function createLedger(counter: TokenCounter, undo: UndoLog): TokenLedger {
  if (counter instanceof HeuristicCounter) return new CodepointLedger(counter, undo);
  if (counter instanceof BpeCounter) return new PieceLedger(counter, undo);
  return new RecountLedger(counter, undo);
}
