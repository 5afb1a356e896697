import type { ResolvedBlocks } from '../blocks/types.ts';
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../constants.ts';
import { likelyAliasTypo, unknownModelMessage } from '../definition/model-name.ts';
import { checkDefinitionNumbers } from '../definition/number-ranges.ts';
import { toolReferenceProblems } from '../definition/tool-references.ts';
import type { AgentDefinition, DefinitionProblem } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import type { AuditEvent, AuditEventInput, EventOf, Started, StartedWarning } from '../journal/events.ts';
import { mcpServersOption } from '../mcp/config.ts';
import { McpPool, type McpToolSet, serversForAgent } from '../mcp/pool.ts';
import { Projection } from '../projection/projection.ts';
import { counterForModel, heuristicCounter, o200kCounter } from '../projection/token-counter.ts';
import { assembleSystemPrompt } from '../prompt/assemble.ts';
import { projectDirs } from '../prompt/project-dirs.ts';
import { DEFAULT_MODELS } from '../providers/constants.ts';
import { prepareModelSettings } from '../providers/model-settings.ts';
import { ReplayCalls } from '../replay/replay-calls.ts';
import type { ReplayRecording } from '../replay/types.ts';
import { createToolRegistry } from '../tools/builtin/index.ts';
import { COMPLETE_TASK, WAIT_FOR_INSTRUCTION } from '../tools/builtin/orchestration.ts';
import { type AgentPermissions, effectiveMode } from '../tools/permissions.ts';
import { buildToolbox } from '../tools/toolbox.ts';
import type { PromptTools } from '../tools/types.ts';
import { RunContext } from './context.ts';
import { countFixed } from './fixed-tokens.ts';
import { limitConditions, limitNotices, resolveLimits } from './limits.ts';
import { contextWindowFor, maxInputFor } from './model-limits.ts';
import { recordedOutcome } from './outcome.ts';
import {
  definitionHashOf,
  pinnedDefinition,
  recordedBlocks,
  resolveStartSettings,
  startedDefinition,
} from './pinning.ts';
import { JOURNAL_FORMAT } from './projection-events.ts';
import { restoreFromJournal } from './resume.ts';
import { routedTools } from './routed-tools.ts';
import type { RunAgentOptions } from './run-agent.ts';
import { newSession, restoreSession, type SessionState } from './session.ts';
import type { AgentChannels, AgentOutcome } from './types.ts';
import { type BlockVersion, deliverUsage, usageRecord } from './usage-record.ts';

const ROUTED_TOOL_NAMES: ReadonlySet<string> = new Set([COMPLETE_TASK, WAIT_FOR_INSTRUCTION]);

/** What runAgent and its start share: set as soon as each exists, so a failure can end the run. */
export interface RunHandles {
  run?: RunContext;
  /** MCP connections the run opened itself (no `options.mcp`); closed when the run ends. */
  ownPool?: McpPool;
}

/** A run ready to loop, or the outcome its journal already recorded. */
export type StartedRun =
  | { readonly kind: 'ended'; readonly outcome: AgentOutcome }
  | {
      readonly kind: 'ready';
      readonly run: RunContext;
      readonly session: SessionState | undefined;
      readonly waitForMessage: AgentChannels['waitForInstruction'];
      readonly wallClockMs: number;
    };

/**
 * Starts (or resumes) the run `options` describe under `signal`. Throws what makes the agent fail
 * before its first round.
 */
export async function startRun(
  options: RunAgentOptions,
  signal: AbortSignal,
  handles: RunHandles,
): Promise<StartedRun> {
  const { agentId } = options;
  let definition = options.definition;
  const resume = options.resumeFrom;
  const started = resume?.[0]?.type === 'Started' ? resume[0] : undefined;
  if (resume) {
    const ended = resume.findLast((e) => e.type === 'Completed' || e.type === 'Failed');
    if (ended) return { kind: 'ended', outcome: recordedOutcome(ended) };
  }
  // A resumed agent runs what it started with: the recorded definition, blocks and settings.
  const pinned = started ? await pinnedDefinition(started, options.definition) : undefined;
  if (pinned) definition = pinned.definition;
  // A definition built in code was never read from a file, whose numbers are checked as read.
  checkDefinitionNumbers(definition);
  const modelSettingsOptions = {
    overrides: prepareModelSettings(options.modelSettings, 'modelSettings'),
    defaults: prepareModelSettings(options.defaultModelSettings, 'defaultModelSettings'),
  };
  const start = started
    ? { blocks: recordedBlocks(started), modelSettings: started.modelSettings ?? {}, dropped: [] }
    : await resolveStartSettings({
        definition,
        cwd: options.cwd,
        provider: options.provider,
        model: options.model,
        ...(options.blocks ? { blocks: options.blocks } : {}),
        ...(options.resolvedBlocks ? { resolvedBlocks: options.resolvedBlocks } : {}),
        ...modelSettingsOptions,
      });
  const { blocks, modelSettings } = start;

  const replay = replayCalls(options.replay, started, resume, definition);
  const session = options.session === true || started?.session === true ? newSession() : undefined;
  const waitForMessage = options.channels?.waitForInstruction;
  if (session && !waitForMessage) {
    throw new UserError(
      'session_without_channel',
      'A session needs channels.waitForInstruction: its user messages arrive there',
      { agentId },
    );
  }
  const definitionHashValue =
    started?.definition.hash ?? options.definitionHash ?? definitionHashOf(definition);
  const limits = resolveLimits(options.limits ?? started?.limits, definition.maxSteps);
  const permissions = options.permissions ?? {};
  checkBypass(definition, permissions);
  const channels = options.channels ?? {};
  const shared = options.registry ?? createToolRegistry();
  // A Supervisor hands its servers read; a caller of runAgent may give a `.mcp.json`-style map.
  const given = options.mcpServers;
  const servers = serversForAgent(
    definition,
    given === undefined || Object.keys(given).length === 0 ? {} : mcpServersOption(given),
  );
  let mcp: McpToolSet = { tools: [], problems: [], notices: [] };
  if (Object.keys(servers).length > 0) {
    let source = options.mcp;
    if (!source) {
      const ownPool = new McpPool({ cwd: options.cwd });
      handles.ownPool = ownPool;
      source = ownPool;
    }
    mcp = await source.toolsFor(servers, signal);
  }
  // The agent's registry reads the shared one through (a parked agent keeps only its own tools).
  const registry = shared.extend(
    [
      ...mcp.tools.filter((t) => !shared.has(t.name)),
      ...routedTools(handles, channels, definition.outputSchema),
    ],
    ROUTED_TOOL_NAMES,
  );
  const warnings = checkToolReferences(definition, registry.names(), mcp);
  // Unknown keys in its block files (ignored): said in Started, as the definition's own are.
  for (const problem of blocks.warnings ?? []) warnings.push(located(problem));
  const unknownModel = unknownModelWarning(definition, options.model, options.modelSource);
  if (unknownModel !== undefined) warnings.push(unknownModel);
  const projectRoot =
    options.projectRoot ??
    (needsProjectRoot(definition, permissions) ? (await projectDirs(options.cwd))[0] : undefined);
  const toolbox = buildToolbox(definition, registry, {
    cwd: options.cwd,
    agentId,
    settings: blocks.settings,
    permissions,
    ...(projectRoot === undefined ? {} : { projectRoot }),
  });
  const system =
    started?.systemPrompt ??
    options.systemPrompt ??
    (await systemPromptFor(options, definition, blocks, toolbox.promptTools));
  const counter = counterForModel(options.model, options.counter);
  const contextWindow = started?.contextWindow ?? options.contextWindow ?? contextWindowFor(options.model);
  const maxInputTokens = started?.maxInputTokens ?? options.maxInputTokens ?? maxInputFor(contextWindow);
  const toolsJson = JSON.stringify(toolbox.specs);
  const fixedTokens = countFixed(counter, system) + countFixed(counter, toolsJson);
  // Usage a server does not report is counted with a BPE tokenizer; o200k stands in for models
  // troupe has no tokenizer for (open models' tokenizers are close to it; chars/4 is not).
  const usageCounter = counter.name === heuristicCounter.name ? o200kCounter : counter;
  const context = started?.context ?? options.context ?? [];
  const task = started?.task ?? options.task;
  const projection = new Projection({ context, task, counter });
  const price = options.provider.priceOf?.(options.model);
  const run = new RunContext({
    agentId,
    definition,
    provider: options.provider,
    model: options.model,
    modelSettings,
    system,
    toolbox,
    projection,
    signal,
    renderBudget: maxInputTokens - fixedTokens,
    limits,
    conditions:
      options.stopWhen === undefined || options.stopWhen.length === 0
        ? limitConditions(limits)
        : [...limitConditions(limits), ...options.stopWhen],
    usageCounter,
    ...(usageCounter === counter ? { fixedUsageTokens: fixedTokens } : {}),
    price,
    replay,
    session,
    ...(channels.requestApproval ? { approvalChannel: channels.requestApproval } : {}),
    ...(channels.inToolSpan ? { inToolSpan: channels.inToolSpan.bind(channels) } : {}),
    approvalSettings: {
      timeoutMs: permissions.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
      onTimeout: permissions.onTimeout ?? 'deny',
    },
    journal: options.journal,
    observer: observerOf(options, definitionHashValue, replay, blocks.pinned),
  });
  handles.run = run;

  if (resume && started) {
    await restoreFromJournal(run, resume, channels, options.truncatedBytes ?? 0, {
      ...(pinned?.changed ? { definitionChanged: pinned.changed } : {}),
      notices: pinned?.notices ?? [],
      // A child's resume always says which of its parent's instructions moved (none, unless its
      // parent's adoption delivered them again): a later adoption then trusts the indices.
      ...(options.parentId === undefined ? {} : { instructionIndices: options.instructionIndices ?? [] }),
    });
    if (session) restoreSession(run, session, resume);
  } else {
    // Pushed to, not spread: see checkToolReferences (limitNotices returns a fresh array).
    const notices = limitNotices(limits, options.model, price);
    for (const dropped of start.dropped) notices.push(dropped);
    // Optional members assigned, not spread in: each conditional spread was a map check that
    // failed now and then, and every failure threw away startRun's optimized code (~0.1-0.6 s of
    // TurboFan per recompile, per host).
    const event: { -readonly [K in keyof Started]: Started[K] } = {
      type: 'Started',
      agentId,
      definition: startedDefinition(definition, definitionHashValue),
      provider: options.provider.name,
      model: options.model,
      contextWindow,
      maxInputTokens,
      context,
      task,
      metadata: options.metadata ?? {},
      systemPrompt: system,
      toolSpecs: toolbox.specs,
      limits,
      format: JOURNAL_FORMAT,
    };
    if (options.parentId !== undefined) event.parentId = options.parentId;
    if (options.spawnCallId !== undefined) event.spawnCallId = options.spawnCallId;
    if (blocks.pinned.length > 0) event.blocks = blocks.pinned;
    if (Object.keys(blocks.settings).length > 0) event.settings = blocks.settings;
    if (Object.keys(modelSettings).length > 0) event.modelSettings = modelSettings;
    if (warnings.length > 0) event.warnings = warnings;
    if (notices.length > 0) event.notices = notices;
    if (replay) event.replay = replay.ref;
    if (session) event.session = true;
    run.record(event);
  }
  return { kind: 'ready', run, session, waitForMessage, wallClockMs: limits.wallClockMs };
}

/**
 * The definition's tool references checked against the tools this run really has (MCP tools of
 * the servers it reached included). An override naming no tool throws UserError
 * `unknown_tool_override` (the agent fails with `invalid_request`); the rest are warnings for the
 * Started event, with MCP servers that could not be reached.
 */
function checkToolReferences(
  definition: AgentDefinition,
  names: readonly string[],
  mcp: McpToolSet,
): StartedWarning[] {
  // Pushed, not map()ped: see below (toolReferenceProblems' optimized loop deopted on it).
  const unreached: string[] = [];
  for (const problem of mcp.problems) unreached.push(problem.server);
  const problems = toolReferenceProblems(definition, { names, unlistedMcpServers: unreached });
  const errors = problems.filter((problem) => problem.severity === 'error');
  if (errors.length > 0) {
    const lines = errors.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`);
    throw new UserError('unknown_tool_override', lines.join('\n'), { problems: errors.map(located) });
  }
  // One literal, pushed to: spreads of map() results gave arrays of another elements kind once
  // this function was optimized, and startRun's optimized code deoptimized on them (wrong map).
  const warnings: StartedWarning[] = [];
  for (const problem of problems) warnings.push(located(problem));
  for (const problem of mcp.problems) warnings.push({ code: 'mcp_unavailable', message: problem.message });
  for (const notice of mcp.notices) warnings.push({ code: 'mcp_tools_dropped', message: notice.message });
  return warnings;
}

/**
 * The one `unknown_model` warning of a run, if any. A model sent that cannot be a model id (no alias
 * or modelMap entry replaced it) and is one edit from an alias is likely refused by the provider: the warning names what gave
 * it, the definition's `model` (at its position) or `source` (`--model`, a spawn's model). The
 * simulated provider sends `simulated` instead of the definition's model; a name there that a real
 * provider would refuse is still said, at its position.
 */
function unknownModelWarning(
  definition: AgentDefinition,
  model: string,
  source: string | undefined,
): StartedWarning | undefined {
  const written = definition.model.trim();
  const fromDefinition = source === undefined && model === written;
  // Only a likely typo of an alias: every spawn checks, and a bare word such as `mistral` is a
  // real model on a local server (`troupe agents validate` still names any name that is no id).
  const sent = likelyAliasTypo(model)
    ? unknownModelMessage(model, source ?? (fromDefinition ? undefined : 'the model resolved for this run'))
    : undefined;
  if (sent !== undefined && !fromDefinition) return { code: 'unknown_model', message: sent };
  const at = definition.sourcePositions?.['/model'];
  const located = (message: string): StartedWarning => ({
    code: 'unknown_model',
    message,
    file: definition.path,
    ...(at ? { line: at.line, column: at.column } : {}),
    path: '/model',
  });
  if (sent !== undefined) return located(sent);
  if (model !== DEFAULT_MODELS.simulated || written === model) return undefined;
  const ignored = likelyAliasTypo(written) ? unknownModelMessage(written) : undefined;
  return ignored === undefined
    ? undefined
    : located(
        `${ignored}; this run does not send it: the simulated provider runs as \`${DEFAULT_MODELS.simulated}\``,
      );
}

/** What sees the run's events: the caller's `onEvent`, and the usage sink on every receipt. */
function observerOf(
  options: RunAgentOptions,
  hash: string,
  replay: ReplayCalls | undefined,
  blocks: readonly BlockVersion[],
): ((event: AuditEventInput) => void) | undefined {
  const { onEvent, usageSink } = options;
  if (!usageSink) return onEvent;
  const identity = {
    agentId: options.agentId,
    parentId: options.parentId,
    definition: { name: options.definition.name, hash },
    provider: options.provider.name,
    model: options.model,
    replay: replay?.ref,
    blocks,
  };
  return (event) => {
    onEvent?.(event);
    if (event.type !== 'ProviderReceipt') return;
    const record = usageRecord(identity, {
      round: event.round,
      step: event.step,
      usage: event.receipt.usage,
      costUsd: event.receipt.costUsd ?? null,
      latencyMs: event.receipt.latencyMs,
      endedAt: Date.now(),
      ...(event.errorCode === undefined ? {} : { errorCode: event.errorCode }),
    });
    deliverUsage(usageSink, record);
  };
}

/**
 * The replay state of a run: undefined outside replays. A journal that started as a replay resumes
 * only with its recording (UserError `replay_recording_missing`: running its calls live would not be
 * a replay), and a recording cannot be applied to a journal that did not start as one
 * (`replay_mismatch`).
 */
function replayCalls(
  recording: ReplayRecording | undefined,
  started: EventOf<'Started'> | undefined,
  resume: readonly AuditEvent[] | undefined,
  definition: AgentDefinition,
): ReplayCalls | undefined {
  if (started?.replay !== undefined && recording === undefined) {
    throw new UserError(
      'replay_recording_missing',
      `Agent ${started.agentId} replays ${started.replay.of}; resume it with that recording (troupe resume of its run directory, or the replay option)`,
      { agentId: started.agentId, of: started.replay.of },
    );
  }
  if (started !== undefined && started.replay === undefined && recording !== undefined) {
    throw new UserError(
      'replay_mismatch',
      `Agent ${started.agentId} did not start as a replay, so it cannot be resumed as one`,
      { agentId: started.agentId },
    );
  }
  return recording === undefined
    ? undefined
    : new ReplayCalls(recording, resume ?? [], definition.paramNameOverrides);
}

/** Whether a rule of the agent is written from the project root (`Read(/src/**)`). */
function needsProjectRoot(definition: AgentDefinition, extra: AgentPermissions): boolean {
  const own = definition.permissions;
  return [
    ...(definition.tools ?? []),
    ...definition.disallowedTools,
    ...own.allow,
    ...own.ask,
    ...own.deny,
    ...(extra.allow ?? []),
    ...(extra.ask ?? []),
    ...(extra.deny ?? []),
  ].some((entry) => /\(\/(?!\/)/.test(entry));
}

/**
 * Throws UserError `bypass_not_allowed` (the agent fails with `invalid_request`) when the agent
 * would run in `bypassPermissions` without the runner's consent.
 */
function checkBypass(definition: AgentDefinition, permissions: AgentPermissions): void {
  if (effectiveMode(definition.permissionMode, permissions.mode) !== 'bypassPermissions') return;
  if (permissions.allowBypass === true) return;
  throw new UserError(
    'bypass_not_allowed',
    `${definition.path}: agent \`${definition.name}\` asks for permissionMode bypassPermissions, which runs every call without asking; ` +
      'it runs only where the supervisor allows it (permissions.allowBypass, or --allow-bypass-permissions)',
    { agent: definition.name, file: definition.path },
  );
}

const definitionJsons = new WeakMap<AgentDefinition, string>();

function definitionJson(definition: AgentDefinition): string {
  let json = definitionJsons.get(definition);
  if (json === undefined) {
    json = JSON.stringify(definition);
    definitionJsons.set(definition, json);
  }
  return json;
}

async function systemPromptFor(
  options: RunAgentOptions,
  definition: AgentDefinition,
  blocks: ResolvedBlocks,
  tools: PromptTools,
): Promise<string> {
  const { prompt: block, settings } = blocks;
  const assemble = (): Promise<string> =>
    assembleSystemPrompt(definition, {
      cwd: options.cwd,
      tools,
      settings,
      ...(block
        ? {
            instructions: {
              text: block.text,
              file: block.source,
              firstLine: block.textLine,
              parameters: block.parameters,
            },
          }
        : {}),
      ...(options.promptParameters ? { parameters: options.promptParameters } : {}),
    });
  const cache = options.promptCache;
  if (!cache) return assemble();
  // The same text as JSON.stringify([definition, cwd, ...]), with the definition's part kept per
  // definition object: agents of one definition (one object in a host) share it.
  const rest = JSON.stringify([options.cwd, options.promptParameters ?? null, block ?? null, settings]);
  const key = `[${definitionJson(definition)},${rest.slice(1)}`;
  let prompt = cache.get(key);
  if (!prompt) {
    prompt = assemble();
    cache.set(key, prompt);
    // A failed assembly is not cached: the next agent gets the real error, not a stale one.
    prompt.catch(() => cache.delete(key));
  }
  return prompt;
}

/** A definition problem as journalled and thrown: where it is and what it says, no severity. */
function located({ code, message, file, line, column, path }: DefinitionProblem) {
  return { code, message, file, line, column, path };
}
