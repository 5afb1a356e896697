/**
 * Span names and attribute keys troupe's traces use: the OpenTelemetry GenAI semantic conventions
 * (development status; https://opentelemetry.io/docs/specs/semconv/gen-ai/) where they define one,
 * `troupe.*` for what they do not. Kept here rather than taken from
 * `@opentelemetry/semantic-conventions`, whose GenAI keys are in its unstable "incubating" entry
 * and change between releases; the library depends on `@opentelemetry/api` alone.
 */

/** Name of the tracer (the instrumentation scope) troupe's spans come from. */
export const TRACER_NAME = 'troupe';

export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  /** The current conventions' name for the provider (since semconv 1.37). */
  providerName: 'gen_ai.provider.name',
  /**
   * The name before semconv 1.37, still the one many backends read (Langfuse's and Phoenix's
   * mappings among them); troupe sets both to the same value.
   */
  system: 'gen_ai.system',
  agentId: 'gen_ai.agent.id',
  agentName: 'gen_ai.agent.name',
  agentDescription: 'gen_ai.agent.description',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  requestTemperature: 'gen_ai.request.temperature',
  requestTopP: 'gen_ai.request.top_p',
  requestTopK: 'gen_ai.request.top_k',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestSeed: 'gen_ai.request.seed',
  requestStopSequences: 'gen_ai.request.stop_sequences',
  requestPresencePenalty: 'gen_ai.request.presence_penalty',
  requestFrequencyPenalty: 'gen_ai.request.frequency_penalty',
  responseModel: 'gen_ai.response.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  reasoningOutputTokens: 'gen_ai.usage.reasoning.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
  systemInstructions: 'gen_ai.system_instructions',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  errorType: 'error.type',
} as const;

/** `gen_ai.operation.name` values (and the first word of span names). */
export const OPERATION = {
  invokeAgent: 'invoke_agent',
  invokeWorkflow: 'invoke_workflow',
  chat: 'chat',
  executeTool: 'execute_tool',
} as const;

export const TROUPE = {
  parentAgentId: 'troupe.agent.parent_id',
  depth: 'troupe.agent.depth',
  definitionPath: 'troupe.agent.definition_path',
  status: 'troupe.agent.status',
  reason: 'troupe.agent.failure_reason',
  rounds: 'troupe.agent.rounds',
  steps: 'troupe.agent.steps',
  restarts: 'troupe.agent.restarts',
  costUsd: 'troupe.cost_usd',
  hostId: 'troupe.host_id',
  resumed: 'troupe.resumed',
  round: 'troupe.round',
  step: 'troupe.step',
  request: 'troupe.request',
  estimatedInputTokens: 'troupe.request.estimated_input_tokens',
  toolsOffered: 'troupe.request.tools',
  toolChoice: 'troupe.request.tool_choice',
  captureFor: 'troupe.request.capture_for',
  latencyMs: 'troupe.response.latency_ms',
  queuedMs: 'troupe.response.queued_ms',
  retries: 'troupe.response.retries',
  usageEstimated: 'troupe.usage.estimated',
  httpStatus: 'http.response.status_code',
  modelName: 'troupe.tool.model_name',
  refused: 'troupe.tool.refused',
  notFitted: 'troupe.tool.result_not_fitted',
  childAgentId: 'troupe.tool.child_agent_id',
  instructionIndex: 'troupe.instruction.index',
  instruction: 'troupe.instruction.text',
  task: 'troupe.agent.task',
  agents: 'troupe.fanout.agents',
  retryDelayMs: 'troupe.retry.delay_ms',
  retryAfterMs: 'troupe.retry_after_ms',
  provider: 'troupe.provider',
  exceptionMessage: 'exception.message',
} as const;

/** Span event names. */
export const EVENT = {
  retry: 'gen_ai.request.retry',
  agentStarted: 'troupe.agent.started',
  agentRestarted: 'troupe.agent.restarted',
  agentResumed: 'troupe.agent.resumed',
  threadCrashed: 'troupe.thread.crashed',
  providerPaused: 'troupe.provider.paused',
  waiting: 'troupe.instruction.waiting',
  instructed: 'troupe.instruction.received',
  assistantText: 'gen_ai.choice',
  approvalDecided: 'troupe.approval.decided',
} as const;
