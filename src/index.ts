/**
 * troupe's public API. Everything exported here is documented; anything else is internal.
 */

// Blocks: versioned prompt, settings and model-settings blocks definitions refer to
export type {
  BlockDir,
  BlockDirsOptions,
  BlockDiscovery,
  DiscoveredBlock,
} from './blocks/file-store.ts';
export { blockDirs, discoverBlocks, fileBlockStore } from './blocks/file-store.ts';
export { BLOCK_ID_PATTERN, highestSatisfying, isBlockId, isVersionRange } from './blocks/ids.ts';
export type { BlockLookup } from './blocks/memory-store.ts';
export { functionBlockStore, memoryBlockStore } from './blocks/memory-store.ts';
export { blockHash } from './blocks/parse.ts';
export type { BlockResolution } from './blocks/resolve.ts';
export { resolveAgentBlocks, resolveBlocks } from './blocks/resolve.ts';
export type {
  Block,
  BlockInput,
  BlockKind,
  BlockRef,
  BlockStore,
  ModelSettingsBlock,
  PinnedBlock,
  PromptBlock,
  PromptParameter,
  PromptRef,
  ResolvedBlocks,
  SettingsBlock,
} from './blocks/types.ts';
// Comparing two runs
export type {
  CompareOptions,
  ItemComparison,
  ItemSide,
  ItemStatus,
  OutcomeChange,
  RunComparison,
  RunTotals,
  ScoreChange,
  ScoreDelta,
  ScorerComparison,
} from './compare/compare.ts';
export { compareRunDirs } from './compare/compare.ts';
export { compareHtmlPieces, renderCompareHtml } from './compare/compare-html.ts';
export type { CompareTextOptions } from './compare/compare-text.ts';
export { compareText, compareTextPieces } from './compare/compare-text.ts';
export type { Gate, GateResult } from './compare/gate.ts';
export { checkGates, parseGate } from './compare/gate.ts';
export type { ToolCallCount, ToolCallDiff } from './compare/tool-calls.ts';
// Defaults
export {
  DEFAULT_MAX_STEPS,
  DEFAULT_MAX_TOTAL_TOKENS,
  DEFAULT_RUN_MAX_TOTAL_TOKENS,
  DEFAULT_TRUNCATION_RETRIES,
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
// Engines: where agents run (see docs/architecture.md)
export type { Backend, EngineDescription } from './engines/engine.ts';
export { checkRedis, resolveRedisUrl } from './engines/redis/connection.ts';
export type { PreparedRedisOptions, RedisBackendOptions } from './engines/redis/options.ts';
export type { RedisWorkerOptions } from './engines/redis/worker.ts';
export { RedisWorker } from './engines/redis/worker.ts';
export type { WorkerGroupOptions } from './engines/redis/worker-group.ts';
export { WorkerGroup } from './engines/redis/worker-group.ts';
export type { PreparedThreadOptions, ThreadBackendOptions } from './engines/threads/options.ts';
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
// Scoring (evaluation of a run's answers)
export {
  DEFAULT_JUDGE_MAX_STEPS,
  DEFAULT_JUDGE_THRESHOLD,
  JUDGE_TEXT_MAX_CHARS,
  MAX_PATTERN_CHARS,
  SCORER_FUNCTION_TIMEOUT_MS,
} from './eval/constants.ts';
export type { JsonPathQuery } from './eval/json-path.ts';
export { compileJsonPath, jsonPathProblem } from './eval/json-path.ts';
export type { JudgeRunOptions, JudgeSpawner, JudgeSpawnOptions } from './eval/judge.ts';
export { JUDGE_RESULT_SCHEMA, judgeTask } from './eval/judge.ts';
export type { SafePattern } from './eval/safe-regex.ts';
export { compileSafePattern, SAFE_PATTERN_FLAGS, safePatternProblem } from './eval/safe-regex.ts';
export type { ScoringOptions } from './eval/scoring.ts';
export { Scoring } from './eval/scoring.ts';
export type { CheckedScorers, JudgeAgentRef, SpecPathSegment, SpecProblemReporter } from './eval/spec.ts';
export { checkScorerSpecs, prepareScorers, SCORER_KEYS, SCORER_TYPES } from './eval/spec.ts';
export type { ScoredItem } from './eval/summary.ts';
export { summarizeScores } from './eval/summary.ts';
export type {
  ContainsScorerSpec,
  ExactScorerSpec,
  ItemScoreSummary,
  ItemScores,
  JsonPathScorerSpec,
  JudgeScorerSpec,
  ModuleScorerSpec,
  NumericScorerSpec,
  RegexScorerSpec,
  SchemaScorerSpec,
  Score,
  ScoreInput,
  ScorerFunction,
  ScorerSpec,
  ScorerTotals,
  ScorerType,
  ScoreValue,
  ScoringSummary,
} from './eval/types.ts';
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
export { hashContinuation, hashInput, isTerminal } from './journal/events.ts';
export type { JournalContents, JournalProblem } from './journal/reader.ts';
export { parseJournal, readJournal } from './journal/reader.ts';
export { redactText, redactValue, registerSecretValues } from './journal/redact.ts';
export type { PendingWait, ResumeState } from './journal/resume.ts';
export { resumeState } from './journal/resume.ts';
export type { JournalSink, MemoryJournalOptions } from './journal/sink.ts';
export { MemoryJournal } from './journal/sink.ts';
export type { UsageTotals } from './journal/usage.ts';
export { addReceipt, knownCost, sumReceipts, ZERO_USAGE_TOTALS } from './journal/usage.ts';
export type {
  FileVerifyResult,
  JournalDamage,
  RenderedInput,
  Rerender,
  VerifyFailure,
  VerifyOptions,
  VerifyReason,
  VerifyResult,
} from './journal/verify.ts';
export {
  damageText,
  journalDamage,
  requestHash,
  verifyJournal,
  verifyJournalContents,
  verifyJournalFile,
} from './journal/verify.ts';
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
export type {
  AgentChannels,
  AgentLimits,
  AgentOutcome,
  FailureReason,
  InheritedSpend,
} from './loop/types.ts';
export type { CalibrationReceipt, CalibratorOptions, ModelCalibration } from './projection/calibrator.ts';
// Projection and token budget
export { Calibrator } from './projection/calibrator.ts';
export { RESULT_NOT_FITTED_TEXT } from './projection/constants.ts';
export { Projection } from './projection/projection.ts';
export type { CounterName, TokenCounter } from './projection/token-counter.ts';
export {
  BpeCounter,
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
export type { ProviderConfig, ProviderLimits, ToolModuleRef } from './protocol/messages.ts';
export { ORCHESTRATION_TOOL_NAMES } from './protocol/messages.ts';
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
export type {
  ModelSettingIssue,
  ModelSettings,
  ModelSettingsProblem,
  ModelSettingsReading,
} from './providers/model-settings.ts';
export {
  MODEL_SETTING_KEYS,
  mergeModelSettings,
  REASONING_EFFORTS,
  readModelSettings,
} from './providers/model-settings.ts';
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
  UsageSide,
} from './providers/types.ts';
// Supervisor
export type { AgentHandleEvents } from './supervisor/agent-handle.ts';
export { AgentHandle } from './supervisor/agent-handle.ts';
export type * from './supervisor/events.ts';
export type { FanOutOptions, FanOutResult, SpawnSpec } from './supervisor/fanout.ts';
export { FanOut } from './supervisor/fanout.ts';
export type {
  HostTool,
  HostToolContext,
  PreparedSupervisorOptions,
  SupervisorOptions,
} from './supervisor/options.ts';
export type { RedisSupervisorOptions } from './supervisor/redis-supervisor.ts';
export { RedisSupervisor } from './supervisor/redis-supervisor.ts';
export type {
  PreparedRunLimits,
  RunBudgetCode,
  RunBudgetSpent,
  RunLimits,
  RunUsage,
} from './supervisor/run-budget.ts';
export type { SessionAnswer, SessionOptions } from './supervisor/session.ts';
export { AgentSession, DEFAULT_SESSION_TASK } from './supervisor/session.ts';
export type { SpawnOptions } from './supervisor/spawn-options.ts';
export { Supervisor } from './supervisor/supervisor.ts';
// Telemetry
export type { TracingOptions } from './telemetry/agent-tracing.ts';
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
export type { WebFetchOptions } from './tools/builtin/web-fetch.ts';
export { createWebFetchTool, WEB_FETCH_DEFAULTS } from './tools/builtin/web-fetch.ts';
export type { WebSearchBackend, WebSearchRequest, WebSearchResult } from './tools/builtin/web-search.ts';
export { createWebSearchTool } from './tools/builtin/web-search.ts';
export { confinePath } from './tools/confine.ts';
export type { ClaudeCodeTool, SpecifierKind } from './tools/names.ts';
export { CLAUDE_CODE_TOOLS, claudeCodeTool } from './tools/names.ts';
export type { PolicyContext, PolicyDefinition, ToolPolicy } from './tools/policy.ts';
export { buildToolPolicy } from './tools/policy.ts';
export { ToolRegistry } from './tools/registry.ts';
export type { Sleep } from './tools/retry.ts';
export { backoffDelay } from './tools/retry.ts';
export type { CallArgs, Rule, RuleContext, RuleEffect, RuleLocation } from './tools/rules.ts';
export { matchRule, parseRule, ruleNamesTool, tryParseRule } from './tools/rules.ts';
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
  ToolGuard,
  ToolOutcome,
  ToolSpec,
  ToolTraceContext,
} from './tools/types.ts';
