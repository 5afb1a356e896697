/** A single-consumer async queue: the producer pushes, the consumer iterates. */

/** Unbounded push queue read through `next()`; `end()` finishes it, `close()` drops what is left. */
export class EventQueue<T> {
  #items: T[] = [];
  #head = 0;
  #waiter: ((result: IteratorResult<T, undefined>) => void) | undefined;
  #ended = false;

  push(item: T): void {
    if (this.#ended) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter({ done: false, value: item });
      return;
    }
    this.#items.push(item);
  }

  /** No more items will come; the consumer still receives the ones already queued. */
  end(): void {
    this.#ended = true;
    const waiter = this.#waiter;
    if (waiter !== undefined && this.#head >= this.#items.length) {
      this.#waiter = undefined;
      waiter({ done: true, value: undefined });
    }
  }

  /** The consumer left: queued and future items are dropped. */
  close(): void {
    this.#items = [];
    this.#head = 0;
    this.end();
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head] as T;
      this.#head += 1;
      if (this.#head === this.#items.length) {
        this.#items = [];
        this.#head = 0;
      }
      return Promise.resolve({ done: false, value });
    }
    if (this.#ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => {
      this.#waiter = resolve;
    });
  }
}
