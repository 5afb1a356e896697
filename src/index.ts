/**
 * troupe's public API. Everything exported here is documented; anything else is internal.
 */

// Defaults
export {
  DEFAULT_MAX_STEPS,
  HARD_MAX_STEPS,
  PROTOCOL_TOKEN_RESERVE,
  REMOVED_MARKER,
  SLICE_REFUSAL,
  SUPERSEDED_MARKER,
} from './constants.ts';
export type {
  AgentDir,
  DiscoveredAgent,
  DiscoveryOptions,
  DiscoveryResult,
  InvalidDefinition,
  ShadowedDefinition,
} from './definition/discovery.ts';
// Agent definitions
export { agentDirs, discoverAgents, getAgent, pickAgent } from './definition/discovery.ts';
export type { ParseMode } from './definition/frontmatter.ts';
export type { LoadOptions, LoadResult } from './definition/load.ts';
export { definitionHash, loadDefinitionFile, parseDefinition } from './definition/load.ts';
export { formatProblem } from './definition/problems.ts';
export type {
  AgentDefinition,
  BashConfig,
  CompletionRequirement,
  DefinitionProblem,
  DefinitionSource,
  OutputFormat,
  PermissionMode,
  ProblemCode,
  PromptMode,
  RetryPolicy,
  SourcePosition,
  ToolConfig,
} from './definition/types.ts';
export type { ErrorFields, SerializedError } from './errors.ts';
// Errors
export {
  describeValue,
  deserializeError,
  hasErrorCode,
  isTroupeError,
  ModelBehaviorError,
  ProviderError,
  SystemError,
  serializeError,
  TroupeError,
  UserError,
} from './errors.ts';
// The audit journal
export { canonicalJson, hashValue } from './journal/canonical-json.ts';
export { GENESIS_HASH, INTERRUPTED_TOOL_RESULT } from './journal/constants.ts';
export type {
  AuditEvent,
  AuditEventInput,
  AuditEventType,
  ChainFields,
  EventOf,
  HistoryKind,
} from './journal/events.ts';
export { hashInput, isTerminal } from './journal/events.ts';
export type { JournalContents, JournalProblem } from './journal/reader.ts';
export { parseJournal, readJournal } from './journal/reader.ts';
export { redactText } from './journal/redact.ts';
export type { PendingWait, ResumeState } from './journal/resume.ts';
export { resumeState } from './journal/resume.ts';
export type { JournalSink, MemoryJournalOptions } from './journal/sink.ts';
export { MemoryJournal } from './journal/sink.ts';
export type { UsageTotals } from './journal/usage.ts';
export { addReceipt, sumReceipts, ZERO_USAGE_TOTALS } from './journal/usage.ts';
export type {
  FileVerifyResult,
  RenderedInput,
  Rerender,
  VerifyFailure,
  VerifyOptions,
  VerifyReason,
  VerifyResult,
} from './journal/verify.ts';
export { verifyJournal, verifyJournalContents, verifyJournalFile } from './journal/verify.ts';
export type { FsyncPolicy, JournalWriterOptions } from './journal/writer.ts';
export { JournalWriter } from './journal/writer.ts';
// The agent loop
export type { ToolResultEffects } from './loop/projection-events.ts';
export { JOURNAL_FORMAT, ProjectionReplay } from './loop/projection-events.ts';
export { journalRerender } from './loop/rerender.ts';
export type { RunAgentOptions } from './loop/run-agent.ts';
export { runAgent } from './loop/run-agent.ts';
export type { LoopProgress, StopCondition, StopVerdict } from './loop/stop-conditions.ts';
export { budget, stepCount, toolCalled } from './loop/stop-conditions.ts';
export type { AgentChannels, AgentLimits, AgentOutcome, FailureReason } from './loop/types.ts';
export type { CalibrationReceipt, CalibratorOptions, ModelCalibration } from './projection/calibrator.ts';
// Projection and token budget
export { Calibrator } from './projection/calibrator.ts';
export { RESULT_NOT_FITTED_TEXT } from './projection/constants.ts';
export { Projection } from './projection/projection.ts';
export type { CounterName, TokenCounter } from './projection/token-counter.ts';
export {
  cl100kCounter,
  countCodePoints,
  counterByName,
  counterForModel,
  heuristicCounter,
  o200kCounter,
} from './projection/token-counter.ts';
export type {
  ProjectionChange,
  ProjectionInit,
  ProjectionOptions,
  ProjectionSnapshot,
  TokenEstimate,
  ToolResultAdmission,
  ToolResultInput,
  ToolResultOptions,
} from './projection/types.ts';
export type { AgentsMdOptions } from './prompt/agents-md.ts';
// Prompt assembly
export { collectAgentsMd, renderAgentsMdSection } from './prompt/agents-md.ts';
export type { AssembleOptions } from './prompt/assemble.ts';
export { assembleSystemPrompt, PROMPT_VARIABLES } from './prompt/assemble.ts';
export type { PromptEnvironment } from './prompt/environment.ts';
export { detectEnvironment } from './prompt/environment.ts';
export type { Skill, SkillsOptions } from './prompt/skills.ts';
export { discoverSkills } from './prompt/skills.ts';
export { renderTemplate } from './prompt/template.ts';
// The supervisor
export type { ProviderConfig, ToolModuleRef } from './protocol/messages.ts';
export type { AnthropicProviderOptions } from './providers/anthropic.ts';
// Providers
export { AnthropicProvider } from './providers/anthropic.ts';
export { DEFAULT_MODELS } from './providers/constants.ts';
export type { Env, EnvironmentProvider } from './providers/environment.ts';
export {
  providerFromEnvironment,
  SIMULATED_FALLBACK_WARNING_CODE,
} from './providers/environment.ts';
export type { ProviderName, ProviderOptionsByName } from './providers/factory.ts';
export { createProvider, defaultProviderName, PROVIDER_NAMES } from './providers/factory.ts';
export type { OpenAIProviderOptions } from './providers/openai.ts';
export { OpenAIProvider } from './providers/openai.ts';
export type { ModelPrice, PriceTable } from './providers/pricing.ts';
export { DEFAULT_PRICES, priceFor } from './providers/pricing.ts';
export type { SimulatedLatency, SimulatedProviderOptions } from './providers/simulated.ts';
export { SIMULATED_LABEL, SimulatedProvider } from './providers/simulated.ts';
export type { ExchangeContext, ModelResponse, ToolResult, TurnDriver } from './providers/turn-runner.ts';
export { createTurn } from './providers/turn-runner.ts';
export type {
  Admission,
  AdmissionRelease,
  AdmissionTicket,
  Provider,
  ProviderHooks,
  RateLimitInfo,
  ReasoningEffort,
  Receipt,
  StopReason,
  ToolCall,
  ToolChoice,
  Turn,
  TurnEvent,
  TurnRequest,
  Usage,
} from './providers/types.ts';
// Scale-out on Redis (the `redis` backend)
export { resolveRedisUrl } from './scaleout/connection.ts';
export type { PreparedRedisSupervisorOptions, RedisSupervisorOptions } from './scaleout/options.ts';
export { RedisSupervisor } from './scaleout/redis-supervisor.ts';
export type { RedisWorkerOptions } from './scaleout/worker.ts';
export { RedisWorker } from './scaleout/worker.ts';
export type { ProviderLimits } from './supervisor/admission.ts';
export type { AgentHandleEvents } from './supervisor/agent-handle.ts';
export { AgentHandle } from './supervisor/agent-handle.ts';
export type * from './supervisor/events.ts';
export type { FanOutOptions, FanOutResult, SpawnSpec } from './supervisor/fanout.ts';
export { FanOut } from './supervisor/fanout.ts';
export type {
  HostTool,
  HostToolContext,
  PreparedSupervisorOptions,
  RedisBackendOptions,
  SupervisorOptions,
} from './supervisor/options.ts';
export { ORCHESTRATION_TOOL_NAMES } from './supervisor/orchestration.ts';
export { WorkerGroup } from './supervisor/redis-worker-group.ts';
export type { SpawnOptions } from './supervisor/supervisor.ts';
export { Supervisor } from './supervisor/supervisor.ts';
// Tools
export { builtinTools, createToolRegistry } from './tools/builtin/index.ts';
export type { CompleteTaskArgs, ToolExecute, WaitForInstructionArgs } from './tools/builtin/orchestration.ts';
export {
  COMPLETE_TASK,
  declareCompleteTask,
  declareWaitForInstruction,
  WAIT_FOR_INSTRUCTION,
} from './tools/builtin/orchestration.ts';
export { TODOS_STATE_KEY } from './tools/builtin/todo-write.ts';
export { confinePath } from './tools/confine.ts';
export { buildToolPolicy, CLAUDE_CODE_TOOL_ALIASES, canonicalToolName } from './tools/policy.ts';
export { ToolRegistry } from './tools/registry.ts';
export type { Sleep } from './tools/retry.ts';
export { backoffDelay } from './tools/retry.ts';
export type { SchemaProblem, SchemaValidator } from './tools/schema.ts';
export { compileSchema, describeProblems } from './tools/schema.ts';
export type { Toolbox, ToolboxDefinition, ToolboxOptions, ToolCallResult } from './tools/toolbox.ts';
export { buildToolbox } from './tools/toolbox.ts';
export type {
  CaptureRequest,
  JsonSchema,
  PromptTools,
  StateUpdate,
  Tool,
  ToolContext,
  ToolOutcome,
  ToolSpec,
} from './tools/types.ts';
