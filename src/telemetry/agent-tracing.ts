/**
 * The supervisor's OpenTelemetry spans, following the GenAI semantic conventions: `invoke_agent`
 * per agent (a child of the `execute_tool spawn_agent` span that spawned it, or of the fan-out's
 * `invoke_workflow` span, or of whatever span is active), `chat` per model request and
 * `execute_tool` per tool call, both children of their agent's span. Retries, 429 pauses, thread
 * crashes, restarts, waits and instructions are span events.
 *
 * Every span is made here, on the supervisor, from the {@link TraceEvent}s the agent's thread or
 * redis worker forwards, with the times they happened: threads and workers need no SDK, and one
 * fan-out is one trace whichever thread or machine ran each agent. Only `@opentelemetry/api` is
 * used: without an SDK registered the tracer is a no-op, spans do not record, and agents are not
 * asked to forward anything.
 */
import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { redactText } from '../journal/redact.ts';
import type { ActorTraceContext, TraceEvent } from '../protocol/messages.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { ToolTraceContext } from '../tools/types.ts';
import { EVENT, GEN_AI, OPERATION, TRACER_NAME, TROUPE } from './attributes.ts';
import { formatTraceparent } from './trace-context.ts';

/** How a supervisor traces its agents. */
export interface TracingOptions {
  /**
   * The tracer spans are made with.
   * @default `trace.getTracer('troupe')`: the globally registered SDK's, a no-op without one
   */
  readonly tracer?: Tracer;
  /**
   * Record content on spans: each agent's task, system prompt and context, tool arguments and
   * results, the model's text and instructions, masked with the journal's secret redaction.
   * Content can hold anything the agents read; keep it off unless the trace store may hold that.
   * @default false
   */
  readonly captureContent?: boolean;
}

/** What the tracing is told of an agent when it is spawned. */
export interface TracedAgent {
  readonly agentId: string;
  readonly parentId: string | undefined;
  readonly depth: number;
  /** Definition name. */
  readonly agent: string;
  /** The model asked for ('' when the definition's default applies). */
  readonly model: string;
  readonly provider: string;
}

/** How an agent ended, as its span records it. */
export interface TracedOutcome {
  readonly status: 'completed' | 'failed';
  readonly reason?: string;
  readonly error?: { readonly code?: string; readonly message: string };
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
  readonly costUsd: number | null;
  readonly rounds: number;
  readonly steps?: number;
}

interface AgentSpans {
  readonly span: Span;
  readonly context: Context;
  readonly info: TracedAgent;
  provider: string;
  model: string;
  /** The open model request. */
  chat: { readonly span: Span; readonly startedAt: number } | undefined;
  /** Open tool calls by call id. */
  readonly tools: Map<string, Span>;
  restarts: number;
}

/**
 * Characters of one content attribute (a tool result, arguments, a prompt, the model's text); the
 * rest is cut with a marker saying how much was left out. The journal keeps the whole text.
 */
export const MAX_CONTENT_CHARS = 16_384;

/** `text` cut to {@link MAX_CONTENT_CHARS}. */
export function clipContent(text: string): string {
  if (text.length <= MAX_CONTENT_CHARS) return text;
  return `${text.slice(0, MAX_CONTENT_CHARS)}… [${text.length - MAX_CONTENT_CHARS} more characters in the journal]`;
}

/** Bound on the open tool spans one agent holds (calls whose result never came); the oldest ends. */
export const MAX_OPEN_TOOL_SPANS = 256;

/** Spans of one supervisor's agents. */
export class AgentTracing {
  readonly #tracer: Tracer;
  readonly #captureContent: boolean;
  readonly #agents = new Map<string, AgentSpans>();

  constructor(options: TracingOptions = {}) {
    this.#tracer = options.tracer ?? trace.getTracer(TRACER_NAME);
    this.#captureContent = options.captureContent === true;
  }

  /**
   * Starts a fan-out's `invoke_workflow` span; the context it returns parents the fan-out's agents.
   * Undefined when the span does not record, or when a recording span is active already (the CLI's
   * run span, an application's span): the agents are that span's children. `agents` is the number
   * of specs when known at the start (an array); else `end` sets it from the number taken.
   */
  workflow(agents: number | undefined): { context: Context; end: (agents: number) => void } | undefined {
    if (trace.getActiveSpan()?.isRecording() === true) return undefined;
    const span = this.#tracer.startSpan(`${OPERATION.invokeWorkflow} fanout`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [GEN_AI.operationName]: OPERATION.invokeWorkflow,
        ...(agents === undefined ? {} : { [TROUPE.agents]: agents }),
      },
    });
    if (!span.isRecording()) return undefined;
    return {
      context: trace.setSpan(context.active(), span),
      end: (taken) => {
        if (agents === undefined) span.setAttribute(TROUPE.agents, taken);
        span.end();
      },
    };
  }

  /**
   * Starts the agent's `invoke_agent` span: under `parent` when given (a fan-out), else under the
   * tool span of the parent's call `parentCallId` (a spawn_agent), else under the active context.
   */
  spawned(info: TracedAgent, parent?: Context, parentCallId?: string): void {
    const parentAgent = info.parentId === undefined ? undefined : this.#agents.get(info.parentId);
    const toolSpan = parentCallId === undefined ? undefined : parentAgent?.tools.get(parentCallId);
    const base =
      parent ??
      (toolSpan && parentAgent
        ? trace.setSpan(parentAgent.context, toolSpan)
        : (parentAgent?.context ?? context.active()));
    // A subagent's name is the model's choice (spawn_agent): one no definition has fails the agent,
    // but its span is made first.
    const name = redactText(info.agent);
    const span = this.#tracer.startSpan(
      `${OPERATION.invokeAgent} ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GEN_AI.operationName]: OPERATION.invokeAgent,
          [GEN_AI.agentId]: info.agentId,
          [GEN_AI.agentName]: name,
          [TROUPE.depth]: info.depth,
          ...(info.parentId === undefined ? {} : { [TROUPE.parentAgentId]: info.parentId }),
          ...(info.model === '' ? {} : { [GEN_AI.requestModel]: info.model }),
        },
      },
      base,
    );
    if (!span.isRecording()) return;
    this.#agents.set(info.agentId, {
      span,
      context: trace.setSpan(base, span),
      info,
      provider: info.provider,
      model: info.model,
      chat: undefined,
      tools: new Map(),
      restarts: 0,
    });
  }

  /** The trace context for the agent's spec; undefined when it is not traced. */
  actorContext(agentId: string): ActorTraceContext | undefined {
    const agent = this.#agents.get(agentId);
    if (!agent) return undefined;
    return { traceparent: formatTraceparent(agent.span.spanContext()), captureContent: this.#captureContent };
  }

  /**
   * A host tool call arrived (possibly before its ToolCall event): makes sure its tool span exists
   * so agents it spawns are its children.
   */
  hostToolCall(agentId: string, name: string, callId: string, at: number = Date.now()): void {
    const agent = this.#agents.get(agentId);
    if (agent && !agent.tools.has(callId)) this.#startTool(agent, name, name, callId, at);
  }

  /**
   * A tool call of the agent starts where the agent runs: makes sure its span exists and returns
   * its W3C trace context, for the tool to run under; undefined when the agent is not traced.
   */
  toolSpan(
    agentId: string,
    name: string,
    callId: string,
    at: number = Date.now(),
  ): ToolTraceContext | undefined {
    const agent = this.#agents.get(agentId);
    if (!agent) return undefined;
    const span = agent.tools.get(callId) ?? this.#startTool(agent, name, name, callId, at);
    const spanContext = span.spanContext();
    const tracestate = spanContext.traceState?.serialize();
    return {
      traceparent: formatTraceparent(spanContext),
      ...(tracestate === undefined || tracestate === '' ? {} : { tracestate }),
    };
  }

  /**
   * Runs `run` (a host tool's closure, on the supervisor) with the span of call `callId` of the
   * agent active, so spans it makes are that call's children; as it is when the call has no span.
   */
  inToolSpan<T>(agentId: string, callId: string, run: () => T): T {
    const agent = this.#agents.get(agentId);
    const span = agent?.tools.get(callId);
    return agent && span ? context.with(trace.setSpan(agent.context, span), run) : run();
  }

  /** The agent started on a thread or worker. */
  started(agentId: string, hostId: number, resumed: boolean): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    agent.span.setAttribute(TROUPE.hostId, hostId);
    agent.span.addEvent(EVENT.agentStarted, { [TROUPE.hostId]: hostId, [TROUPE.resumed]: resumed });
  }

  /** Its runner was lost; it continues from its journal. Open request and tool spans end with the run. */
  restarted(
    agentId: string,
    restart: number,
    cause: { code?: string; message: string },
    charged: boolean,
  ): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    agent.restarts = restart;
    this.#endOpen(agent, cause.code ?? 'restarted', Date.now());
    agent.span.addEvent(EVENT.agentRestarted, {
      [TROUPE.restarts]: restart,
      [GEN_AI.errorType]: cause.code ?? 'lost',
      [TROUPE.exceptionMessage]: redactText(cause.message),
      'troupe.restart.charged': charged,
    });
  }

  /** A thread died with these agents on it. */
  threadCrashed(hostId: number, agents: readonly string[], cause: { code?: string; message: string }): void {
    for (const agentId of agents) {
      this.#agents.get(agentId)?.span.addEvent(EVENT.threadCrashed, {
        [TROUPE.hostId]: hostId,
        [GEN_AI.errorType]: cause.code ?? 'thread_crashed',
        [TROUPE.exceptionMessage]: redactText(cause.message),
      });
    }
  }

  /**
   * A provider answered 429 and every agent using it pauses (threads engine: one pause per provider
   * key, the provider's name): an event on the span of each traced agent of that provider.
   */
  backoff(provider: string, retryAfterMs: number, at: number = Date.now()): void {
    for (const agent of this.#agents.values()) {
      if (agent.info.provider !== provider) continue;
      agent.span.addEvent(
        EVENT.providerPaused,
        { [TROUPE.provider]: provider, [TROUPE.retryAfterMs]: retryAfterMs },
        at,
      );
    }
  }

  /**
   * A tool call's approval was decided (journalled as ApprovalDecided): an event on the call's span
   * when it is open, else on the agent's. The wait for it is inside the call's span.
   */
  approvalDecided(
    agentId: string,
    decided: {
      readonly callId: string;
      readonly tool: string;
      readonly rule: string;
      readonly approved: boolean;
      readonly by: string;
    },
  ): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    (agent.tools.get(decided.callId) ?? agent.span).addEvent(EVENT.approvalDecided, {
      [GEN_AI.toolCallId]: decided.callId,
      [GEN_AI.toolName]: decided.tool,
      'troupe.approval.approved': decided.approved,
      'troupe.approval.by': decided.by,
      'troupe.approval.rule': decided.rule,
    });
  }

  /** The agent's request waited out a 429 pause (redis engine). */
  paused(agentId: string, provider: string, waitMs: number): void {
    this.#agents
      .get(agentId)
      ?.span.addEvent(EVENT.providerPaused, { [TROUPE.provider]: provider, [TROUPE.retryAfterMs]: waitMs });
  }

  /** The job was parked waiting for an instruction (redis engine). */
  parked(agentId: string, hostId: number, index: number): void {
    this.#agents.get(agentId)?.span.addEvent(EVENT.waiting, {
      [TROUPE.hostId]: hostId,
      [TROUPE.instructionIndex]: index,
      parked: true,
    });
  }

  /** One event forwarded from where the agent runs, which happened at `at` (epoch ms). */
  event(agentId: string, at: number, event: TraceEvent): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    switch (event.type) {
      case 'Started':
        this.#onStarted(agent, event);
        return;
      case 'InferenceSubmitted':
        this.#onSubmitted(agent, at, event);
        return;
      case 'ProviderReceipt':
        this.#onReceipt(agent, at, event);
        return;
      case 'Text':
        agent.span.addEvent(
          EVENT.assistantText,
          { [TROUPE.round]: event.round, [GEN_AI.outputMessages]: clipContent(event.text) },
          at,
        );
        return;
      case 'ToolCall': {
        const span =
          agent.tools.get(event.callId) ??
          this.#startTool(agent, event.name, event.modelName, event.callId, at);
        span.setAttribute(TROUPE.round, event.round);
        if (event.modelName !== event.name) span.setAttribute(TROUPE.modelName, event.modelName);
        if (event.args !== undefined)
          span.setAttribute(GEN_AI.toolCallArguments, clipContent(JSON.stringify(event.args)));
        return;
      }
      case 'ToolResult': {
        const span =
          agent.tools.get(event.callId) ?? this.#startTool(agent, event.name, event.name, event.callId, at);
        agent.tools.delete(event.callId);
        span.setAttributes({
          [TROUPE.refused]: event.refused,
          [TROUPE.notFitted]: !event.projectionAccepted,
          ...(event.child === undefined ? {} : { [TROUPE.childAgentId]: event.child }),
          ...(event.text === undefined ? {} : { [GEN_AI.toolCallResult]: clipContent(event.text) }),
        });
        if (!event.ok) {
          span.setAttribute(GEN_AI.errorType, event.refused ? 'refused' : 'tool_error');
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: event.refused ? 'refused' : 'tool call failed',
          });
        }
        span.end(at);
        return;
      }
      case 'Waiting':
        agent.span.addEvent(
          EVENT.waiting,
          { [GEN_AI.toolCallId]: event.callId, [TROUPE.instructionIndex]: event.index },
          at,
        );
        return;
      case 'Instructed':
        agent.span.addEvent(
          EVENT.instructed,
          {
            [TROUPE.instructionIndex]: event.index,
            ...(event.callId === undefined ? {} : { [GEN_AI.toolCallId]: event.callId }),
            ...(event.text === undefined ? {} : { [TROUPE.instruction]: clipContent(event.text) }),
          },
          at,
        );
        return;
      case 'Resumed':
        agent.span.addEvent(EVENT.agentResumed, { 'troupe.resumed.next_round': event.nextRound }, at);
        return;
    }
  }

  /** The agent ended: open spans end, then its span with the outcome. */
  ended(agentId: string, outcome: TracedOutcome): void {
    const agent = this.#agents.get(agentId);
    if (!agent) return;
    this.#agents.delete(agentId);
    const now = Date.now();
    this.#endOpen(agent, outcome.status === 'completed' ? 'ended' : (outcome.reason ?? 'failed'), now);
    const attributes: Attributes = {
      [TROUPE.status]: outcome.status,
      [GEN_AI.inputTokens]: outcome.usage.inputTokens,
      [GEN_AI.outputTokens]: outcome.usage.outputTokens,
      [TROUPE.rounds]: outcome.rounds,
      [TROUPE.restarts]: agent.restarts,
      ...(outcome.steps === undefined ? {} : { [TROUPE.steps]: outcome.steps }),
      ...(outcome.costUsd === null ? {} : { [TROUPE.costUsd]: outcome.costUsd }),
    };
    agent.span.setAttributes(attributes);
    if (outcome.status === 'failed') {
      agent.span.setAttributes({
        [TROUPE.reason]: outcome.reason ?? 'failed',
        [GEN_AI.errorType]: outcome.error?.code ?? outcome.reason ?? 'failed',
      });
      agent.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: redactText(outcome.error?.message ?? outcome.reason ?? ''),
      });
    }
    agent.span.end(now);
  }

  #onStarted(agent: AgentSpans, event: Extract<TraceEvent, { type: 'Started' }>): void {
    agent.provider = event.provider;
    agent.model = event.model;
    agent.span.setAttributes({
      [GEN_AI.providerName]: event.provider,
      [GEN_AI.system]: event.provider,
      [GEN_AI.requestModel]: event.model,
    });
    if (event.content) {
      agent.span.setAttributes({
        [TROUPE.task]: clipContent(event.content.task),
        [GEN_AI.systemInstructions]: clipContent(event.content.systemPrompt),
      });
    }
  }

  #onSubmitted(
    agent: AgentSpans,
    at: number,
    event: Extract<TraceEvent, { type: 'InferenceSubmitted' }>,
  ): void {
    if (agent.chat) agent.chat.span.end(at);
    const span = this.#tracer.startSpan(
      `${OPERATION.chat} ${agent.model}`,
      {
        kind: SpanKind.CLIENT,
        startTime: at,
        attributes: {
          [GEN_AI.operationName]: OPERATION.chat,
          [GEN_AI.providerName]: agent.provider,
          [GEN_AI.system]: agent.provider,
          [GEN_AI.requestModel]: agent.model,
          [GEN_AI.agentId]: agent.info.agentId,
          [TROUPE.round]: event.round,
          [TROUPE.request]: event.request,
          [TROUPE.estimatedInputTokens]: event.estimatedTokens,
          [TROUPE.toolsOffered]: event.tools,
          ...(event.step === undefined ? {} : { [TROUPE.step]: event.step }),
          ...(event.toolChoice === undefined
            ? {}
            : {
                [TROUPE.toolChoice]:
                  typeof event.toolChoice === 'string' ? event.toolChoice : event.toolChoice.tool,
              }),
          ...(event.captureFor === undefined ? {} : { [TROUPE.captureFor]: event.captureFor }),
          ...requestAttributes(event.modelSettings),
        },
      },
      agent.context,
    );
    agent.chat = { span, startedAt: at };
  }

  #onReceipt(agent: AgentSpans, at: number, event: Extract<TraceEvent, { type: 'ProviderReceipt' }>): void {
    const chat = agent.chat;
    if (!chat) return;
    agent.chat = undefined;
    const { span, startedAt } = chat;
    const { receipt } = event;
    span.setAttributes({
      [GEN_AI.responseModel]: receipt.model,
      [GEN_AI.inputTokens]: receipt.usage.inputTokens,
      [GEN_AI.outputTokens]: receipt.usage.outputTokens,
      [TROUPE.latencyMs]: receipt.latencyMs,
      [TROUPE.retries]: receipt.retries,
      ...(receipt.usage.cachedInputTokens
        ? { [GEN_AI.cacheReadInputTokens]: receipt.usage.cachedInputTokens }
        : {}),
      ...(receipt.usage.estimated === true ? { [TROUPE.usageEstimated]: true } : {}),
      ...(receipt.queuedMs === undefined ? {} : { [TROUPE.queuedMs]: receipt.queuedMs }),
      ...(receipt.costUsd === undefined ? {} : { [TROUPE.costUsd]: receipt.costUsd }),
      ...(receipt.httpStatus === undefined ? {} : { [TROUPE.httpStatus]: receipt.httpStatus }),
      ...(event.stopReason === undefined ? {} : { [GEN_AI.finishReasons]: [event.stopReason] }),
    });
    for (const retry of receipt.retryLog ?? []) {
      span.addEvent(
        EVENT.retry,
        {
          [GEN_AI.errorType]: retry.code,
          [TROUPE.retryDelayMs]: retry.delayMs,
          ...(retry.status === undefined ? {} : { [TROUPE.httpStatus]: retry.status }),
        },
        startedAt + retry.atMs,
      );
    }
    if (event.errorCode !== undefined) {
      span.setAttribute(GEN_AI.errorType, event.errorCode);
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.errorCode });
    }
    span.end(at);
  }

  #startTool(agent: AgentSpans, name: string, modelName: string, callId: string, at: number): Span {
    if (agent.tools.size >= MAX_OPEN_TOOL_SPANS) {
      const [oldestId, oldest] = agent.tools.entries().next().value ?? [];
      if (oldestId !== undefined && oldest) {
        oldest.setStatus({ code: SpanStatusCode.ERROR, message: 'no result recorded' });
        oldest.end(at);
        agent.tools.delete(oldestId);
      }
    }
    const span = this.#tracer.startSpan(
      `${OPERATION.executeTool} ${name}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: at,
        attributes: {
          [GEN_AI.operationName]: OPERATION.executeTool,
          [GEN_AI.toolName]: name,
          [GEN_AI.toolCallId]: callId,
          [GEN_AI.toolType]: 'function',
          [GEN_AI.agentId]: agent.info.agentId,
          ...(modelName === name ? {} : { [TROUPE.modelName]: modelName }),
        },
      },
      agent.context,
    );
    agent.tools.set(callId, span);
    return span;
  }

  /** Ends the agent's open request and tool spans (its run ended or was lost). */
  #endOpen(agent: AgentSpans, why: string, at: number): void {
    if (agent.chat) {
      agent.chat.span.setAttribute(GEN_AI.errorType, why);
      agent.chat.span.setStatus({ code: SpanStatusCode.ERROR, message: `no answer: ${why}` });
      agent.chat.span.end(at);
      agent.chat = undefined;
    }
    for (const span of agent.tools.values()) {
      span.setAttribute(GEN_AI.errorType, why);
      span.setStatus({ code: SpanStatusCode.ERROR, message: `no result: ${why}` });
      span.end(at);
    }
    agent.tools.clear();
  }
}

/** The GenAI request attributes of the model settings a request was sent with. */
function requestAttributes(settings: ModelSettings | undefined): Attributes {
  if (settings === undefined) return {};
  const attributes: Attributes = {};
  const set = (key: string, value: number | readonly string[] | undefined): void => {
    if (value !== undefined) attributes[key] = typeof value === 'number' ? value : [...value];
  };
  set(GEN_AI.requestTemperature, settings.temperature);
  set(GEN_AI.requestTopP, settings.topP);
  set(GEN_AI.requestTopK, settings.topK);
  set(GEN_AI.requestMaxTokens, settings.maxOutputTokens);
  set(GEN_AI.requestSeed, settings.seed);
  set(GEN_AI.requestStopSequences, settings.stop);
  set(GEN_AI.requestPresencePenalty, settings.presencePenalty);
  set(GEN_AI.requestFrequencyPenalty, settings.frequencyPenalty);
  return attributes;
}
