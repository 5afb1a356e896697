/**
 * The thread engine's index of its journal directory for `Engine.childStarts`: the ids at the head
 * of each journal's first line (src/journal/started-head.ts), by the parent they name. Each
 * journal's head is read once per engine, when a search first finds it, so searching for many
 * resumed parents' children reads the directory's heads once, not once per parent, and the bound
 * of a search (`JournalScanBounds.maxJournals`) counts only the journals naming that parent: a
 * child late in a run of more than that many agents is still found.
 *
 * A journal whose head cannot be read yet (empty, being written, damaged) is read again by the
 * next search. Memory: a name per journal read, and the ids of those naming a parent.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { readFirstEvent } from '../../journal/reader.ts';
import { readStartedHead, type StartedHead } from '../../journal/started-head.ts';
import { type ChildStart, type ChildStarts, childStartOf, type JournalScanBounds } from '../engine.ts';

export class ChildJournalIndex {
  readonly #dir: string;
  /** Journals whose head was read (or found past the bound), by file name. */
  readonly #read = new Set<string>();
  /** The heads naming each parent, with the journal each is the head of. */
  readonly #byParent = new Map<string, { readonly file: string; readonly head: StartedHead }[]>();
  /** Journals whose ids lie past the bound: they may name any parent. */
  readonly #tooLong: string[] = [];

  constructor(dir: string) {
    this.#dir = dir;
  }

  /**
   * The journals naming `parentId` as their parent: at most `bounds.maxJournals` of them have their
   * first line parsed whole (up to `bounds.maxBytes`, for the child's agent and task; a longer one
   * gives its ids only); the rest, and the journals whose ids lie past `bounds.maxHeadBytes`, are
   * `notExamined`.
   */
  childStarts(parentId: string, bounds: JournalScanBounds): ChildStarts {
    this.#refresh(bounds.maxHeadBytes);
    const names = `"parentId":${JSON.stringify(parentId)}`;
    const starts: ChildStart[] = [];
    const notExamined = [...this.#tooLong];
    for (const [examined, { file: full, head }] of (this.#byParent.get(parentId) ?? []).entries()) {
      if (examined >= bounds.maxJournals) {
        notExamined.push(full);
        continue;
      }
      const first = readFirstEvent(full, bounds.maxBytes, (line) => line.includes(names));
      if (first?.type === 'Started' && first.parentId === parentId)
        starts.push(childStartOf(first.agentId, first.spawnCallId, first.definition.name, first.task));
      else starts.push(childStartOf(head.agentId, head.spawnCallId));
    }
    return { starts, notExamined };
  }

  /** Reads the heads of the journals not read yet. */
  #refresh(maxHeadBytes: number): void {
    let files: string[];
    try {
      files = readdirSync(this.#dir);
    } catch {
      return;
    }
    for (const file of files) {
      if (!file.endsWith('.jsonl') || this.#read.has(file)) continue;
      const full = path.join(this.#dir, file);
      const head = readStartedHead(full, maxHeadBytes);
      if (head === undefined) continue;
      this.#read.add(file);
      if (head === 'too_long') this.#tooLong.push(full);
      else if (head.parentId !== undefined) {
        const list = this.#byParent.get(head.parentId);
        if (list === undefined) this.#byParent.set(head.parentId, [{ file: full, head }]);
        else list.push({ file: full, head });
      }
    }
  }
}
