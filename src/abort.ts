/** Small abort helpers that always remove their listeners (no leaks on long-lived signals). */

/** Sleeps `ms`, rejecting with `signal.reason` if the signal aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Listeners are objects with `handleEvent` rather than closures: a parked agent keeps several
 * (its turn, its tool call), and an object of two fields is about a third of a closure and its
 * context.
 */
class RejectOnAbort {
  readonly #signal: AbortSignal;
  readonly #reject: (reason: unknown) => void;

  constructor(signal: AbortSignal, reject: (reason: unknown) => void) {
    this.#signal = signal;
    this.#reject = reject;
  }

  handleEvent(): void {
    this.#reject(this.#signal.reason);
  }
}

class AbortWithParent {
  readonly #parent: AbortSignal;
  readonly #controller: AbortController;

  constructor(parent: AbortSignal, controller: AbortController) {
    this.#parent = parent;
    this.#controller = controller;
  }

  handleEvent(): void {
    this.#controller.abort(this.#parent.reason);
  }
}

/** Resolves like `promise`, or rejects with `signal.reason` as soon as the signal aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = new RejectOnAbort(signal, reject);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Aborts `controller` when `parent` aborts, with the parent's reason. Returns the function that
 * removes the link; call it in `finally`. AbortSignal.any is avoided: on Node 20 its signals are
 * kept alive by the source signal, which leaks on a long-lived agent signal.
 */
export function followSignal(parent: AbortSignal | undefined, controller: AbortController): () => void {
  if (parent === undefined) return () => {};
  if (parent.aborted) {
    controller.abort(parent.reason);
    return () => {};
  }
  const link = new AbortWithParent(parent, controller);
  parent.addEventListener('abort', link, { once: true });
  return () => parent.removeEventListener('abort', link);
}

/** Why `signal` aborted, as text: the reason's message, the reason itself, or 'aborted'. */
export function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'aborted' : String(reason);
}
