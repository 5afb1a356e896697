/**
 * The core both engines' indexes for `Engine.childStarts` share (src/engines/threads/child-index.ts
 * for a journal directory, src/engines/redis/child-index.ts for a queue's journal streams): the ids
 * at the head of each journal's first line (src/journal/started-head.ts), by the parent they name,
 * and the cut of a search at its bound. Each engine keeps only how it lists its journals and how it
 * reads one; a journal is named by what that engine reads it by (a file's path, a stream's key).
 *
 * Memory: a name per journal recorded, and the ids of those naming a parent.
 */
import type { StartedHead } from '../journal/started-head.ts';
import type { JournalScanBounds } from './engine.ts';

/** A journal naming the parent searched for, and the ids at its head. */
export interface NamedHead {
  /** The journal: a file's path, a stream's key. */
  readonly name: string;
  readonly head: StartedHead;
}

/** What a search may read: {@link ParentHeads.cut}. */
export interface ParentHeadsCut {
  /** The journals naming the parent to examine, at most `bounds.maxJournals`, in the order found. */
  readonly examine: readonly NamedHead[];
  /** The journals naming it past the bound, and every journal whose ids lie past the head bound. */
  readonly notExamined: string[];
}

export class ParentHeads {
  /** Journals whose head was recorded (or found past the head bound), by name. */
  readonly #read = new Set<string>();
  /** The heads naming each parent, with the journal each is the head of. */
  readonly #byParent = new Map<string, NamedHead[]>();
  /** Journals whose ids lie past the head bound: they may name any parent. */
  readonly #tooLong: string[] = [];

  /** Whether `name`'s head was recorded: a journal is read once per index. */
  has(name: string): boolean {
    return this.#read.has(name);
  }

  /**
   * Records the head of journal `name` (`too_long`: its ids lie past the head bound; undefined: its
   * first line holds no ids). A journal recorded already is left as it is (searches overlapping on
   * redis may read it twice), and one naming no parent is only marked read.
   */
  add(name: string, head: StartedHead | 'too_long' | undefined): void {
    if (this.#read.has(name)) return;
    this.#read.add(name);
    if (head === 'too_long') this.#tooLong.push(name);
    else if (head?.parentId !== undefined) {
      const list = this.#byParent.get(head.parentId);
      if (list === undefined) this.#byParent.set(head.parentId, [{ name, head }]);
      else list.push({ name, head });
    }
  }

  /**
   * The journals recorded as naming `parentId`: the first `bounds.maxJournals` to examine, the
   * rest, and every journal past the head bound (it may name any parent), `notExamined`.
   */
  cut(parentId: string, bounds: Pick<JournalScanBounds, 'maxJournals'>): ParentHeadsCut {
    const named = this.#byParent.get(parentId) ?? [];
    return {
      examine: named.slice(0, Math.max(0, bounds.maxJournals)),
      notExamined: [
        ...this.#tooLong,
        ...named.slice(Math.max(0, bounds.maxJournals)).map(({ name }) => name),
      ],
    };
  }
}
