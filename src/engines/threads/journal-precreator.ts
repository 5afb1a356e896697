/**
 * Creates new agents' journal files on the main thread, ahead of the actor hosts that will open
 * them, so that files in the journal directory are only ever created by one thread.
 *
 * Why: creating a file takes its directory's lock in the kernel, and on Linux a thread that finds
 * the lock held by a running thread spins for it. Two hosts starting agents at once in the same
 * journal directory each burned a core waiting for the other (measured on ext4: 2,000 files from
 * two threads cost twice the CPU of the same files from one, and took longer). How long one create
 * takes also swings by an order of magnitude on ext4 (8 µs to 300 µs: the inode allocator scans
 * past inodes deleted in the last ~30 s), and the spinning scales with it.
 *
 * Nothing depends on the file being there: a host opens its agent's journal with
 * `JournalWriter.open(path, { precreated: true })`, which creates the file itself when this class
 * has not got to it yet. A create here never replaces anything (`O_EXCL`), and fails quietly:
 * the host that opens the journal reports whatever is wrong with the directory.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';

/** Main-thread time one batch of creates may take before it yields to the event loop. */
export const PRECREATE_SLICE_MS = 2;

/** Creates journal files, a time slice per macrotask, in the order they were queued. */
export class JournalPrecreator {
  readonly #dir: string;
  #queue: string[] = [];
  #next = 0;
  #scheduled = false;
  #closed = false;
  #dirChecked = false;

  /** `dir` is the journal directory; files are `<dir>/<agentId>.jsonl`. */
  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Files queued and not created (or skipped) yet. */
  get pending(): number {
    return this.#queue.length - this.#next;
  }

  /**
   * Queues the journals of `agentIds` (new agents about to start, in the order their hosts start
   * them). Lists from several hosts are interleaved, so every host's next agents are created first.
   */
  add(agentIdsByHost: readonly (readonly string[])[]): void {
    if (this.#closed) return;
    const longest = Math.max(0, ...agentIdsByHost.map((ids) => ids.length));
    for (let i = 0; i < longest; i += 1) {
      for (const ids of agentIdsByHost) {
        const id = ids[i];
        if (id !== undefined) this.#queue.push(path.join(this.#dir, `${id}.jsonl`));
      }
    }
    this.#schedule();
  }

  /** Drops what is queued; nothing is created after this. */
  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#next = 0;
  }

  #schedule(): void {
    if (this.#scheduled || this.pending === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#drain();
    });
  }

  #drain(): void {
    const start = performance.now();
    while (!this.#closed && this.#next < this.#queue.length) {
      const file = this.#queue[this.#next] as string;
      this.#next += 1;
      if (!this.#create(file)) {
        // The directory cannot take files: the hosts will say why, each for its own agent.
        this.#queue = [];
        this.#next = 0;
        return;
      }
      if (performance.now() - start >= PRECREATE_SLICE_MS) break;
    }
    if (this.#next === this.#queue.length) {
      this.#queue = [];
      this.#next = 0;
    }
    this.#schedule();
  }

  /** Creates `file` empty unless it exists; false when the directory refuses. */
  #create(file: string): boolean {
    try {
      closeSync(openSync(file, 'ax'));
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return true;
      if (code !== 'ENOENT' || this.#dirChecked) return false;
    }
    // The journal directory does not exist yet (the first host would create it): once.
    this.#dirChecked = true;
    try {
      mkdirSync(this.#dir, { recursive: true });
    } catch {
      return false;
    }
    return this.#create(file);
  }
}
