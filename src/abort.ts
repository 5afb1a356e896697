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

/** Resolves like `promise`, or rejects with `signal.reason` as soon as the signal aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
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
  const onAbort = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return () => parent.removeEventListener('abort', onAbort);
}

/** Why `signal` aborted, as text: the reason's message, the reason itself, or 'aborted'. */
export function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'aborted' : String(reason);
}
