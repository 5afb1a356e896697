/**
 * The thread engine's index of its journal directory for `Engine.childStarts`: the ids at the head
 * of each journal's first line (src/journal/started-head.ts), by the parent they name, kept in a
 * {@link ParentHeads} (src/engines/parent-heads.ts, shared with the redis engine's index). Each
 * journal's head is read once per engine, when a search first finds it, so searching for many
 * resumed parents' children reads the directory's heads once, not once per parent, and the bound
 * of a search (`JournalScanBounds.maxJournals`) counts only the journals naming that parent: a
 * child late in a run of more than that many agents is still found. The directory is listed on
 * each search (locally; `JournalScanBounds.search` is not used).
 *
 * A journal whose head cannot be read yet (empty, being written, damaged) is read again by the
 * next search. Memory: a path per journal read, and the ids of those naming a parent.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { readFirstEvent } from '../../journal/reader.ts';
import { readStartedHead } from '../../journal/started-head.ts';
import { type ChildStart, type ChildStarts, childStartOf, type JournalScanBounds } from '../engine.ts';
import { ParentHeads } from '../parent-heads.ts';

export class ChildJournalIndex {
  readonly #dir: string;
  /** The heads read, by journal path. */
  readonly #heads = new ParentHeads();

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
    const { examine, notExamined } = this.#heads.cut(parentId, bounds);
    for (const { name: full, head } of examine) {
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
      if (!file.endsWith('.jsonl')) continue;
      const full = path.join(this.#dir, file);
      if (this.#heads.has(full)) continue;
      const head = readStartedHead(full, maxHeadBytes);
      if (head !== undefined) this.#heads.add(full, head);
    }
  }
}
