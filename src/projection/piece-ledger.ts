/**
 * The exact, incremental ledger for BPE counters (o200k, cl100k).
 *
 * Every visible section with a safe cut (safe-cuts.ts) is split into head | interior | tail at its
 * first and last cut. The render then falls apart, at those cuts, into the sections' interiors and
 * the *seams* between consecutive cut sections: the previous one's tail, the separators, any visible
 * sections without a cut, and the next one's head. Each cut is a cut of the whole render, so
 *
 *   count(render) = sum of interiors + sum of seam counts      (exactly, not a bound)
 *
 * A section's seam count is stored on the section whose head ends it (`node.glue`); the seam after
 * the last cut section is `glueEnd`. A change re-counts the changed section's interior and at most
 * the two seams that touch it: O(size of the change + size of the neighbouring heads and tails).
 */
import { MEASURE_CACHE_SIZE, SECTION_SEPARATOR } from './constants.ts';
import type { TokenLedger } from './ledger.ts';
import { findCutRange } from './safe-cuts.ts';
import type { SectionList, SectionNode, SectionText } from './section-list.ts';
import type { TokenCounter } from './token-counter.ts';
import type { UndoLog } from './undo-log.ts';

/** A text split at its first and last safe cut. */
export interface PieceSplit {
  /** Text before the first cut. */
  readonly head: string;
  /** Text from the last cut on. */
  readonly tail: string;
  /** Tokens between the first and last cut (0 when they coincide). */
  readonly interior: number;
}

function isCutSection(node: SectionNode): boolean {
  return node.visible && node.text.split !== undefined;
}

/** Exact incremental counting for counters whose pieces obey safe-cuts.ts. */
export class PieceLedger implements TokenLedger {
  readonly counter: TokenCounter;
  readonly #undo: UndoLog;
  /** `sum` = interiors + seams of cut sections + `glueEnd`. */
  readonly #tally = { sum: 0, glueEnd: 0 };
  readonly #recent = new Map<string, SectionText>();

  constructor(counter: TokenCounter, undo: UndoLog) {
    this.counter = counter;
    this.#undo = undo;
  }

  measure(text: string): SectionText {
    const cached = this.#recent.get(text);
    if (cached !== undefined) return cached;
    const range = findCutRange(text);
    const split =
      range === undefined
        ? undefined
        : {
            head: text.slice(0, range.first),
            tail: text.slice(range.last),
            interior: this.counter.count(text.slice(range.first, range.last)),
          };
    const measured: SectionText = { text, codePoints: 0, split };
    // A fit check measures a tool result and the real add measures it again: remember a few.
    if (this.#recent.size >= MEASURE_CACHE_SIZE) {
      const oldest = this.#recent.keys().next();
      if (oldest.done !== true) this.#recent.delete(oldest.value);
    }
    this.#recent.set(text, measured);
    return measured;
  }

  beforeChange(node: SectionNode): void {
    const split = isCutSection(node) ? node.text.split : undefined;
    if (split !== undefined) this.#addToSum(-(split.interior + node.glue));
  }

  afterChange(list: SectionList, node: SectionNode, following: SectionNode | undefined): void {
    const split = isCutSection(node) ? node.text.split : undefined;
    if (split !== undefined) {
      this.#undo.assign(node, 'glue', this.#seamBefore(list, node));
      this.#addToSum(split.interior + node.glue);
    }
    let next = node.linked ? node.next : following;
    while (next !== undefined && !isCutSection(next)) next = next.next;
    if (next !== undefined) {
      const glue = this.#seamBefore(list, next);
      this.#addToSum(glue - next.glue);
      this.#undo.assign(next, 'glue', glue);
    } else {
      const glue = this.#seamBefore(list, undefined);
      this.#addToSum(glue - this.#tally.glueEnd);
      this.#undo.assign(this.#tally, 'glueEnd', glue);
    }
  }

  total(): number {
    return this.#tally.sum;
  }

  /** Tokens of the seam that ends at `end`'s first cut, or at the end of the render. */
  #seamBefore(list: SectionList, end: SectionNode | undefined): number {
    const parts: string[] = [];
    if (end !== undefined) parts.push(end.text.split?.head ?? end.text.text);
    for (let node = end === undefined ? list.last : end.prev; node !== undefined; node = node.prev) {
      if (!node.visible) continue;
      const split = node.text.split;
      parts.push(split === undefined ? node.text.text : split.tail);
      if (split !== undefined) break;
    }
    if (parts.length === 0) return 0;
    return this.counter.count(parts.reverse().join(SECTION_SEPARATOR));
  }

  #addToSum(delta: number): void {
    if (delta !== 0) this.#undo.assign(this.#tally, 'sum', this.#tally.sum + delta);
  }
}
