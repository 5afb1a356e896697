/**
 * The host's end of its callback port: `complete_task`, host tools and rate-limit reports go to the
 * supervisor as numbered calls, the calls of one event-loop turn in one message, and each promise
 * settles when its answer comes back (answers, too, come batched per turn).
 */
import { deserializeError } from '../src/errors.ts';
import { extend } from '../src/objects.ts';
import type {
  AdmissionEndpoint,
  HostCall,
  HostCallMessage,
  HostCallReplyMessage,
  SupervisorCallbackApi,
} from '../src/protocol/messages.ts';
import type { ToolOutcome, ToolTraceContext } from '../src/tools/types.ts';

/** A call before it is numbered (distributes over the union). */
type Unnumbered<T> = T extends unknown ? Omit<T, 'id'> : never;

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/** Calls the supervisor over a raw port. */
export class CallbackClient implements SupervisorCallbackApi {
  readonly #port: AdmissionEndpoint<HostCallReplyMessage, HostCallMessage>;
  readonly #pending = new Map<number, Pending>();
  #queued: HostCall[] = [];
  #nextId = 1;
  #flushScheduled = false;

  constructor(port: AdmissionEndpoint<HostCallReplyMessage, HostCallMessage>) {
    this.#port = port;
    port.on('message', (message) => {
      for (const reply of message.replies) {
        const pending = this.#pending.get(reply.id);
        if (!pending) continue;
        this.#pending.delete(reply.id);
        if ('error' in reply) pending.reject(deserializeError(reply.error));
        else pending.resolve(reply.value);
      }
    });
  }

  /** Calls not answered yet (for tests and diagnostics). */
  get pending(): number {
    return this.#pending.size;
  }

  reportRateLimit(providerKey: string, retryAfterMs: number): Promise<void> {
    return this.#call({ method: 'reportRateLimit', providerKey, retryAfterMs }) as Promise<void>;
  }

  completeTask(agentId: string, result: unknown): Promise<{ accepted: boolean; message?: string }> {
    return this.#call({ method: 'completeTask', agentId, result }) as Promise<{
      accepted: boolean;
      message?: string;
    }>;
  }

  callHostTool(
    agentId: string,
    name: string,
    args: Readonly<Record<string, unknown>>,
    callId?: string,
    resume?: boolean,
  ): Promise<ToolOutcome> {
    return this.#call({
      method: 'callHostTool',
      agentId,
      name,
      args,
      callId,
      ...(resume === true ? { resume } : {}),
    }) as Promise<ToolOutcome>;
  }

  toolSpan(agentId: string, name: string, callId: string, at: number): Promise<ToolTraceContext | undefined> {
    return this.#call({ method: 'toolSpan', agentId, name, callId, at }) as Promise<
      ToolTraceContext | undefined
    >;
  }

  #call(call: Unnumbered<HostCall>): Promise<unknown> {
    const id = this.#nextId++;
    this.#queued.push(extend(call, { id }) as HostCall);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => this.#flush());
    }
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
    });
  }

  #flush(): void {
    this.#flushScheduled = false;
    const calls = this.#queued;
    this.#queued = [];
    if (calls.length > 0) this.#port.postMessage({ type: 'calls', calls });
  }
}
