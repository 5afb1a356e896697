/**
 * An undo log for "what if" questions. The projection answers "would this change fit?" by applying
 * the change for real and rolling it back, so a hypothetical estimate runs exactly the code the real
 * change runs and can never disagree with it. Each mutation records its inverse only while a trial
 * is open, so ordinary changes pay nothing.
 */
import { SystemError } from '../errors.ts';

/** Mutation helpers that can be rolled back while a trial is open. */
export class UndoLog {
  #entries: (() => void)[] | undefined;

  /** Records the inverse of a mutation that has just been made. */
  record(undo: () => void): void {
    this.#entries?.push(undo);
  }

  /** Runs `fn`, then undoes everything it changed, newest first, even when it throws. */
  trial<T>(fn: () => T): T {
    if (this.#entries !== undefined) {
      throw new SystemError('projection_reentered', 'A projection trial started inside another trial');
    }
    const entries: (() => void)[] = [];
    this.#entries = entries;
    try {
      return fn();
    } finally {
      this.#entries = undefined;
      for (let i = entries.length - 1; i >= 0; i--) entries[i]?.();
    }
  }

  /** Sets `object[field]`, recording the old value. */
  assign<T extends object, K extends keyof T>(object: T, field: K, value: T[K]): void {
    const old = object[field];
    object[field] = value;
    if (this.#entries !== undefined) this.#entries.push(() => (object[field] = old));
  }

  /** `map.set(key, value)`, recording the old entry. Map order is not restored (nothing relies on it). */
  mapSet<K, V>(map: Map<K, V>, key: K, value: V): void {
    const had = map.has(key);
    const old = map.get(key);
    map.set(key, value);
    if (this.#entries === undefined) return;
    this.#entries.push(() => {
      if (had) map.set(key, old as V);
      else map.delete(key);
    });
  }

  /** `map.delete(key)`, recording the old entry. */
  mapDelete<K, V>(map: Map<K, V>, key: K): void {
    if (!map.has(key)) return;
    const old = map.get(key) as V;
    map.delete(key);
    this.#entries?.push(() => map.set(key, old));
  }

  /** `set.add(value)`, recording whether it was new. */
  setAdd<V>(set: Set<V>, value: V): void {
    if (set.has(value)) return;
    set.add(value);
    this.#entries?.push(() => set.delete(value));
  }

  /** `set.delete(value)`, recording whether it was there. */
  setDelete<V>(set: Set<V>, value: V): void {
    if (!set.delete(value)) return;
    this.#entries?.push(() => set.add(value));
  }

  /** `array.push(value)`, recording a pop. */
  push<V>(array: V[], value: V): void {
    array.push(value);
    this.#entries?.push(() => array.pop());
  }
}
