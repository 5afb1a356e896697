/**
 * Starts the loop for one actor, from its spec: the one place where an {@link ActorSpec} becomes
 * loop options. Actor hosts and redis workers both call it, so a field added to the spec (trace
 * context, model settings) is read here once and reaches the agent on either engine.
 */
import type { AuditEvent, AuditEventInput } from '../../journal/events.ts';
import type { JournalSink } from '../../journal/sink.ts';
import { runAgent } from '../../loop/run-agent.ts';
import type { AgentChannels, AgentOutcome } from '../../loop/types.ts';
import type { McpToolSource } from '../../mcp/pool.ts';
import type { ActorSpec, AgentSignal } from '../../protocol/messages.ts';
import type { Provider } from '../../providers/types.ts';
import { traceSignal } from '../../telemetry/trace-events.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import type { ToolTraceContext } from '../../tools/types.ts';
import { agentSignals, type WantsSignal } from './agent-signal.ts';

/** What the engine lends one run of an actor. */
export interface ActorRun {
  readonly provider: Provider;
  readonly registry: ToolRegistry;
  readonly cwd: string;
  /** The runner's MCP connections, shared by its agents (which servers: `spec.mcpServers`). */
  readonly mcp: McpToolSource;
  readonly journal: JournalSink;
  /** The journal's events when the agent continues from them. */
  readonly resumeFrom?: readonly AuditEvent[];
  /** Bytes of a torn last journal line cut away before resuming. */
  readonly truncatedBytes?: number;
  readonly signal: AbortSignal;
  readonly channels: AgentChannels;
  /** Receives what the supervisor is told about the agent. */
  readonly onSignal: (signal: AgentSignal) => void;
  /**
   * The W3C trace context of the `execute_tool` span of tool call `callId` of a traced agent,
   * asked of the supervisor that makes the spans (undefined: the tool runs in the agent's context).
   */
  readonly toolSpan?: (name: string, callId: string, at: number) => Promise<ToolTraceContext | undefined>;
  /** Whether the supervisor listens for an optional signal (read at each event). @default all */
  readonly wantsSignal?: WantsSignal;
  readonly promptCache: Map<string, Promise<string>>;
}

/** Runs (or resumes) the agent `spec` describes to its outcome. */
export async function runActor(spec: Omit<ActorSpec, 'resume'>, run: ActorRun): Promise<AgentOutcome> {
  const { agentId, trace } = spec;
  const onEvent = forwarder(agentId, trace, run.onSignal, run.wantsSignal);
  let channels = run.channels;
  const start = (): Promise<AgentOutcome> =>
    runAgent({
      agentId,
      ...(spec.parentId === undefined ? {} : { parentId: spec.parentId }),
      ...(spec.spawnCallId === undefined ? {} : { spawnCallId: spec.spawnCallId }),
      ...(spec.instructionIndices === undefined ? {} : { instructionIndices: spec.instructionIndices }),
      definition: spec.definition,
      task: spec.task,
      context: spec.context,
      metadata: spec.metadata,
      provider: run.provider,
      model: spec.model,
      modelSettings: spec.modelSettings,
      defaultModelSettings: spec.defaultModelSettings,
      ...(spec.blocks ? { resolvedBlocks: spec.blocks } : {}),
      registry: run.registry,
      cwd: run.cwd,
      mcpServers: spec.mcpServers,
      mcp: run.mcp,
      journal: run.journal,
      ...(run.resumeFrom
        ? {
            resumeFrom: run.resumeFrom,
            ...(run.truncatedBytes === undefined ? {} : { truncatedBytes: run.truncatedBytes }),
          }
        : {}),
      signal: run.signal,
      limits: spec.limits,
      ...(spec.replay ? { replay: spec.replay } : {}),
      ...(spec.session ? { session: true } : {}),
      // Jobs added by an older supervisor carry none.
      permissions: spec.permissions ?? {},
      channels,
      onEvent,
      promptCache: run.promptCache,
    });
  if (trace === undefined) return start();
  // Inside the agent's span context: spans user tools or instrumented libraries make here (with an
  // SDK registered in this thread or worker) join the agent's trace. The OpenTelemetry API is
  // imported only for a traced agent: loading it is ~10 % of an actor-host thread's start.
  const [{ context }, { contextFromTraceparent }] = await Promise.all([
    import('@opentelemetry/api'),
    import('../../telemetry/trace-context.ts'),
  ]);
  const toolSpan = run.toolSpan;
  if (toolSpan !== undefined) {
    // A tool runs under its call's execute_tool span (GenAI conventions), not the agent's: the
    // supervisor makes that span, so its id is asked for before the tool starts when an SDK's
    // context manager is registered here, and otherwise only when the tool reads
    // `ctx.traceContext` (an MCP call sends it on): in the usual thread nothing else could read it.
    const probe = context.active().setValue(CONTEXT_PROBE, true);
    const carriesContext = (): boolean => context.with(probe, () => context.active() === probe);
    channels = {
      ...channels,
      inToolSpan: async (name, callId, runTool) => {
        const at = Date.now();
        let asked: Promise<ToolTraceContext | undefined> | undefined;
        const traceContext = (): Promise<ToolTraceContext | undefined> => {
          asked ??= toolSpan(name, callId, at).catch(() => undefined);
          return asked;
        };
        if (!carriesContext()) return runTool(traceContext);
        const span = await traceContext();
        return span === undefined
          ? runTool(traceContext)
          : context.with(contextFromTraceparent(span.traceparent), () => runTool(traceContext));
      },
    };
  } else {
    // No way to ask for the call's span (a runner given none): a tool passes on the agent's.
    const agentContext: ToolTraceContext = { traceparent: trace.traceparent };
    const traceContext = (): Promise<ToolTraceContext> => Promise.resolve(agentContext);
    channels = { ...channels, inToolSpan: (_name, _callId, runTool) => runTool(traceContext) };
  }
  return context.with(contextFromTraceparent(trace.traceparent), start);
}

/** A context key whose value tells whether `context.with` makes a context active in this thread. */
const CONTEXT_PROBE = Symbol('troupe.contextProbe');

/**
 * What the runner is told of the agent's events. Built apart from runActor so that the closure,
 * which lives as long as the agent, holds only what it uses (not the spec and the run's options).
 */
function forwarder(
  agentId: string,
  trace: ActorSpec['trace'],
  onSignal: (signal: AgentSignal) => void,
  wantsSignal: WantsSignal | undefined,
): (event: AuditEventInput) => void {
  const toSignal = agentSignals(agentId, undefined, wantsSignal);
  return (event) => {
    const signal = toSignal(event);
    if (signal) onSignal(signal);
    if (trace === undefined) return;
    const forwarded = traceSignal(agentId, event, trace.captureContent);
    if (forwarded) onSignal(forwarded);
  };
}
