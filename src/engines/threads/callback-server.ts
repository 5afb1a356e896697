/**
 * The supervisor's end of one host's callback port: runs the host's calls
 * ({@link SupervisorCallbackApi}) and posts their answers back, the answers ready in one
 * event-loop turn in one message. A call that throws is answered with its serialized error.
 */
import { serializeError } from '../../errors.ts';
import type {
  AdmissionEndpoint,
  HostCall,
  HostCallMessage,
  HostCallReply,
  HostCallReplyMessage,
  SupervisorCallbackApi,
} from '../../protocol/messages.ts';

/** Serves one host's callback port. */
export class CallbackServer {
  readonly #port: AdmissionEndpoint<HostCallMessage, HostCallReplyMessage>;
  readonly #api: SupervisorCallbackApi;
  #replies: HostCallReply[] = [];
  #flushScheduled = false;
  #closed = false;

  constructor(port: AdmissionEndpoint<HostCallMessage, HostCallReplyMessage>, api: SupervisorCallbackApi) {
    this.#port = port;
    this.#api = api;
    port.on('message', (message) => {
      for (const call of message.calls) this.#run(call);
    });
  }

  /** Stops answering (the host died or the pool closed). */
  close(): void {
    this.#closed = true;
    this.#replies = [];
  }

  #run(call: HostCall): void {
    let answer: unknown;
    try {
      answer = this.#dispatch(call);
    } catch (error) {
      this.#reply({ id: call.id, error: serializeError(error) });
      return;
    }
    Promise.resolve(answer).then(
      (value) => this.#reply({ id: call.id, value }),
      (error: unknown) => this.#reply({ id: call.id, error: serializeError(error) }),
    );
  }

  #dispatch(call: HostCall): unknown {
    switch (call.method) {
      case 'completeTask':
        return this.#api.completeTask(call.agentId, call.result);
      case 'callHostTool':
        return this.#api.callHostTool(call.agentId, call.name, call.args, call.callId, call.resume === true);
      case 'reportRateLimit':
        return this.#api.reportRateLimit(call.providerKey, call.retryAfterMs);
      case 'toolSpan':
        return this.#api.toolSpan(call.agentId, call.name, call.callId, call.at);
    }
  }

  #reply(reply: HostCallReply): void {
    if (this.#closed) return;
    this.#replies.push(reply);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      const replies = this.#replies;
      this.#replies = [];
      if (replies.length > 0 && !this.#closed) this.#port.postMessage({ type: 'replies', replies });
    });
  }
}
