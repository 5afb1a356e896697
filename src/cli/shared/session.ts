/**
 * One agent run in this process, from a command line: resolve the definition, pick the provider,
 * open the journal, run the loop. `troupe run` starts a session and `troupe resume` continues one
 * from its journal; both go through here so the two can never disagree on how an agent is run.
 */
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { PinnedBlock } from '../../blocks/types.ts';
import { discoverAgents, getAgent, pickAgent } from '../../definition/discovery.ts';
import { definitionHash } from '../../definition/load.ts';
import type { AgentDefinition, DefinitionProblem } from '../../definition/types.ts';
import { describeValue, SystemError, UserError } from '../../errors.ts';
import type { AuditEvent, AuditEventInput, EventOf } from '../../journal/events.ts';
import { makeDirectories } from '../../journal/make-directories.ts';
import { readJournal } from '../../journal/reader.ts';
import { resumeState } from '../../journal/resume.ts';
import type { JournalSink } from '../../journal/sink.ts';
import { verifyJournalContents } from '../../journal/verify.ts';
import { JournalWriter } from '../../journal/writer.ts';
import { resolveLimits } from '../../loop/limits.ts';
import { recordedDefinition, resolveStartSettings } from '../../loop/pinning.ts';
import { journalRerender } from '../../loop/rerender.ts';
import { type RunAgentOptions, runAgent } from '../../loop/run-agent.ts';
import type { AgentChannels, AgentLimits, AgentOutcome } from '../../loop/types.ts';
import { checkSkills } from '../../prompt/assemble.ts';
import { type ModelSettings, prepareModelSettings } from '../../providers/model-settings.ts';
import { ioErrorText } from '../../run-dir/io-error-text.ts';
import { mergeRunPermissions, readRunPermissions } from '../../run-dir/plan-permissions.ts';
import { runMcpServers } from '../../supervisor/definitions.ts';
import type { AgentPermissions } from '../../tools/permissions.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import { RUNS_DIR } from './constants.ts';
import {
  chooseProvider,
  type Env,
  type ProviderChoice,
  providerByName,
  providerNotice,
  resolveModel,
} from './provider-choice.ts';
import type { ProviderTimeouts } from './provider-timeouts.ts';

/** Definition warnings the agent's Started event says again, where they apply to the run. */
const SAID_AT_START: ReadonlySet<string> = new Set([
  'unknown_model',
  'unknown_tool',
  'no_tools',
  'invalid_tool_rule',
  'unknown_mcp_server',
]);

/** What a session is about to do, for the header a command prints before it starts. */
export interface SessionInfo {
  readonly command: 'run' | 'resume';
  readonly agentId: string;
  /** The definition's name. */
  readonly agent: string;
  /** Where the definition was read from (`builtin:<name>` for built-ins); the recorded path for an ended journal. */
  readonly definitionPath: string | undefined;
  /**
   * What reading the definition file warned about (`lenient_parse`, `unknown_key`,
   * `name_slugified`, ...), printed with the header and in the `--json` Run line; not the warnings
   * the agent's Started event repeats (tools, model). None when resuming.
   */
  readonly definitionWarnings?: readonly DefinitionProblem[];
  readonly provider: string;
  readonly simulated: boolean;
  /** `provider: NAME (why)`: the first line of every run's output. */
  readonly providerNotice: string;
  readonly model: string;
  /** Absolute path of the journal file. */
  readonly journal: string;
  /**
   * The journal's directory, when this session made it (a `--journal` whose directory did not
   * exist): the command says so once on stderr.
   */
  readonly createdDirectory?: string;
  /** Working directory the agent's file tools are confined to. */
  readonly cwd: string;
  readonly task: string;
  /** The model settings every request is sent with (the journal's, when resuming). */
  readonly modelSettings?: ModelSettings;
  /** The blocks the agent runs with, each pinned to a version (the journal's, when resuming). */
  readonly blocks?: readonly PinnedBlock[];
  /** Set when resuming. */
  readonly resume?: {
    /** Events already in the journal. */
    readonly events: number;
    /** Bytes of a torn last line cut away (a crash during an append). */
    readonly truncatedBytes: number;
    /**
     * The definition file changed since the run started: the definition recorded in the journal
     * runs, the file is not used.
     */
    readonly definitionChanged: boolean;
    /**
     * No definition of that name is found from the working directory any more (the file was
     * deleted or renamed): the definition recorded in the journal runs.
     */
    readonly definitionMissing?: boolean;
    /** The agent had already ended: nothing is run, the recorded outcome is reported. */
    readonly ended: boolean;
    /** The limits recorded when the run started, and the tokens the journal says were used. */
    readonly budget: {
      readonly limits: AgentLimits | undefined;
      readonly tokens: number;
      readonly estimated: boolean;
    };
  };
}

/** Options of {@link PreparedSession.execute}. */
export interface ExecuteOptions {
  /** Aborting it cancels the agent: it ends Failed with reason `cancelled`. */
  readonly signal?: AbortSignal;
  /** Sees every event as journalled (with `seq` and `hash`), right after it reached the file. */
  readonly onEvent?: (event: AuditEvent) => void;
  /**
   * Sees every event the agent records (before its `seq` and `hash`) or only announces: a resumed
   * session repeats its last answer to the caller without journalling it again (src/loop/session.ts).
   */
  readonly onAgentEvent?: (event: AuditEventInput) => void;
  /** Where the agent's instructions come from: a session's user messages (`troupe chat`). */
  readonly channels?: AgentChannels;
  /** Where calls that ask for approval wait. @default none: they are denied */
  readonly requestApproval?: AgentChannels['requestApproval'];
}

/** A session ready to run: the definition is resolved, the provider built, the journal open. */
export interface PreparedSession {
  readonly info: SessionInfo;
  /** Runs the agent to its outcome, then closes the journal. Call at most once. */
  execute(options?: ExecuteOptions): Promise<AgentOutcome>;
  /** Closes the journal without running anything. Safe after `execute`. */
  close(): void;
}

/** What `troupe run` asks for. */
export interface RunRequest {
  /** Agent name, resolved by discovery from `cwd`. */
  readonly agent: string;
  readonly task: string;
  /** Absolute working directory. */
  readonly cwd: string;
  /** `--provider`. @default openai or anthropic when a key is configured, else simulated */
  readonly provider?: string;
  /** `--model`. @default the definition's model, else the provider's default */
  readonly model?: string;
  /** `--model-map`: aliases added or overridden. @default {} */
  readonly modelMap?: Readonly<Record<string, string>>;
  /** Journal file. @default `<cwd>/.troupe/runs/<timestamp>-<agent>-<id>.jsonl` */
  readonly journal?: string;
  /** Model requests allowed. @default the definition's `maxSteps` */
  readonly maxSteps?: number;
  /** Token budget (input + output); 0 = unlimited. @default DEFAULT_MAX_TOTAL_TOKENS */
  readonly maxTokens?: number;
  /** Cost budget in USD; 0 = unlimited. @default unlimited */
  readonly maxCostUsd?: number;
  /** Wall-clock limit in ms; 0 = unlimited. @default unlimited */
  readonly wallClockMs?: number;
  /** `--temperature`, `--reasoning-effort`...: over the definition's model settings, key by key. @default {} */
  readonly modelSettings?: ModelSettings;
  /** @default process.env */
  readonly env?: Env;
  /** Tools the agent may be given. @default the built-in tools */
  readonly registry?: ToolRegistry;
  /** Clock for the default journal name. @default () => new Date() */
  readonly now?: () => Date;
  /**
   * Run as a session (`troupe chat`): each instruction from `ExecuteOptions.channels` is a user
   * message answered by one turn. @default false
   */
  readonly session?: boolean;
  /** Rules, mode, bypass consent and approval timeout besides the definition's. @default none */
  readonly permissions?: AgentPermissions;
  /** `--request-timeout-ms`, `--idle-timeout-ms` (or their variables). @default the provider's */
  readonly providerTimeouts?: ProviderTimeouts;
  /**
   * `--latency-ms`: the simulated model's delay before each answer; UserError `invalid_option` for
   * another provider. @default 0
   */
  readonly simulatedLatencyMs?: number;
}

/** What `troupe resume` asks for. */
export interface ResumeRequest {
  /** Journal file of the agent to continue. */
  readonly journal: string;
  /** @default the working directory recorded when the run started (Started `metadata.cwd`), else process.cwd() */
  readonly cwd?: string;
  /** @default process.env */
  readonly env?: Env;
  /** Tools the agent may be given; must offer what the run started with. @default the built-in tools */
  readonly registry?: ToolRegistry;
  /**
   * The caller feeds a session's messages (`troupe chat --resume`). A session's journal is refused
   * without it (UserError `session_journal`): resumed with no one to talk to, it would end at once.
   * @default false
   */
  readonly session?: boolean;
  /**
   * Rules, mode, bypass consent and approval timeout added to those the run started with (which
   * its Started `metadata.permissions` and `metadata.approvalTimeoutMs` recorded): rules are
   * appended, the rest replaces. @default the recorded ones alone
   */
  readonly permissions?: AgentPermissions;
  /** `--request-timeout-ms`, `--idle-timeout-ms` (or their variables). @default the provider's */
  readonly providerTimeouts?: ProviderTimeouts;
  /**
   * `--latency-ms`: the simulated model's delay before each answer; UserError `invalid_option` for
   * another provider. @default 0
   */
  readonly simulatedLatencyMs?: number;
}

/**
 * Prepares `troupe run`. Everything that can be wrong with the request (unknown agent, missing API
 * key, a journal file that already holds events) fails here, before a journal is created: UserError
 * `unknown_agent`, `invalid_definition`, `unknown_provider`, `missing_api_key`, `invalid_option`,
 * `journal_exists`.
 */
export async function prepareRun(request: RunRequest): Promise<PreparedSession> {
  const env = request.env ?? process.env;
  if (request.task.trim() === '') {
    throw new UserError(
      'invalid_option',
      `Expected \`--task\` to describe the task, got ${describeValue(request.task)}`,
      {
        option: 'task',
      },
    );
  }
  if (request.maxSteps !== undefined && !(Number.isSafeInteger(request.maxSteps) && request.maxSteps > 0)) {
    throw new UserError(
      'invalid_option',
      `Expected \`--max-steps\` to be a positive integer, got ${describeValue(request.maxSteps)}`,
      { option: 'maxSteps' },
    );
  }
  const { definition, warnings } = pickAgent(await discoverAgents({ cwd: request.cwd }), request.agent);
  const choice = chooseProvider(request.provider, env, request.providerTimeouts, request.simulatedLatencyMs);
  const model = resolveModel(choice.name, request.model, definition.model, request.modelMap);
  // What an unknown_model warning names: a name sent that is not the definition's as written came
  // from the flags (the built-in aliases and default models are all ids).
  const modelSource =
    request.model !== undefined
      ? '`--model`'
      : model !== definition.model.trim() && !choice.simulated
        ? '`--model-map`'
        : undefined;
  const id = randomBytes(4).toString('hex');
  const agentId = `${definition.name}-${id}`;
  const journalPath = resolve(
    request.journal ??
      join(request.cwd, RUNS_DIR, `${timestamp((request.now ?? (() => new Date()))())}-${agentId}.jsonl`),
  );
  // Checked before opening: opening would already cut a torn tail off someone else's journal.
  const existing = journalStat(journalPath);
  if (existing !== undefined && existing.size > 0) {
    throw new UserError(
      'journal_exists',
      `Expected a new journal file, but ${journalPath} already exists; ` +
        'continue that agent with `troupe resume` or choose another --journal',
      { path: journalPath },
    );
  }
  const limits: AgentLimits = {
    ...(request.maxSteps === undefined ? {} : { maxSteps: request.maxSteps }),
    ...(request.maxTokens === undefined ? {} : { maxTotalTokens: request.maxTokens }),
    ...(request.maxCostUsd === undefined ? {} : { maxCostUsd: request.maxCostUsd }),
    ...(request.wallClockMs === undefined ? {} : { wallClockMs: request.wallClockMs }),
  };
  // Checked now, so a bad limit fails before a journal exists.
  resolveLimits(limits, definition.maxSteps);
  // Blocks and model settings too: an unresolvable block or a setting the provider cannot send
  // is the request's fault, reported before anything is journalled.
  const modelSettings = prepareModelSettings(request.modelSettings, 'modelSettings');
  const start = await resolveStartSettings({
    definition,
    cwd: request.cwd,
    provider: choice.provider,
    model,
    overrides: modelSettings,
  });
  // A skill to pre-load that does not exist fails the prompt: said before a journal exists.
  await checkSkills(definition, request.cwd);
  const mcpServers = await runMcpServers({ cwd: request.cwd, mcpServers: {}, mcpProjectFile: true });
  // Made here, not by the writer, to tell the user: a typo in `--journal` makes a directory.
  const created = request.journal === undefined ? undefined : journalDirectory(journalPath);
  const writer = JournalWriter.open(journalPath);
  const info: SessionInfo = {
    ...(created === undefined ? {} : { createdDirectory: dirname(journalPath) }),
    command: 'run',
    agentId,
    agent: definition.name,
    definitionPath: definition.path,
    definitionWarnings: warnings.filter((problem) => !SAID_AT_START.has(problem.code)),
    provider: choice.name,
    simulated: choice.simulated,
    providerNotice: choice.notice,
    model,
    journal: journalPath,
    cwd: request.cwd,
    task: request.task,
    modelSettings: start.modelSettings,
    blocks: start.blocks.pinned,
  };
  return session(info, writer, (sink, options) =>
    runAgent({
      agentId,
      definition,
      task: request.task,
      metadata: {
        cwd: request.cwd,
        command: request.session ? 'troupe chat' : 'troupe run',
        // Recorded so that `troupe resume` runs the agent under the same permissions.
        ...recordedPermissions(request.permissions),
      },
      provider: choice.provider,
      model,
      ...(modelSource === undefined ? {} : { modelSource }),
      modelSettings,
      resolvedBlocks: start.blocks,
      cwd: request.cwd,
      journal: sink,
      mcpServers,
      ...(request.registry ? { registry: request.registry } : {}),
      limits,
      ...(request.session ? { session: true } : {}),
      ...(request.permissions ? { permissions: request.permissions } : {}),
      ...executeExtras(options),
    }),
  );
}

/**
 * Prepares `troupe resume`: reads and verifies the journal, resolves the definition by the name it
 * recorded and re-creates its provider. A journal that does not verify is refused (SystemError
 * `journal_corrupt`, with the first bad event): continuing it would chain new events onto damage.
 * A journal whose agent already ended is reported, not run again.
 */
export async function prepareResume(request: ResumeRequest): Promise<PreparedSession> {
  const env = request.env ?? process.env;
  const journalPath = resolve(request.journal);
  const contents = readJournal(journalPath);
  const verified = verifyJournalContents(contents, { rerender: journalRerender() });
  if (!verified.ok) {
    const bad = verified.firstBad;
    throw new SystemError(
      'journal_corrupt',
      `Expected a journal that verifies, but ${journalPath} does not` +
        (bad ? ` (seq ${bad.seq}: ${bad.reason}: ${bad.message})` : '') +
        '; see `troupe verify`',
      { path: journalPath, ...(bad ? { firstBad: bad } : {}) },
    );
  }
  const state = resumeState(contents.events);
  const { started } = state;
  if (started.session === true && request.session !== true && !state.ended) {
    throw new UserError(
      'session_journal',
      `Expected the journal of a task run, but ${journalPath} holds a chat; continue it with \`troupe chat --resume\``,
      { path: journalPath },
    );
  }
  const budget = {
    limits: started.limits,
    tokens: state.totals.usage.inputTokens + state.totals.usage.outputTokens,
    estimated: state.totals.usage.estimated === true,
  };
  const recordedCwd = typeof started.metadata.cwd === 'string' ? started.metadata.cwd : undefined;
  const cwd = resolve(request.cwd ?? recordedCwd ?? process.cwd());
  const base = {
    command: 'resume' as const,
    agentId: started.agentId,
    agent: started.definition.name,
    provider: started.provider,
    model: started.model,
    journal: journalPath,
    cwd,
    task: started.task,
    ...(started.modelSettings ? { modelSettings: started.modelSettings } : {}),
    ...(started.blocks ? { blocks: started.blocks } : {}),
  };

  if (state.ended) {
    const ended = state.ended;
    const info: SessionInfo = {
      ...base,
      definitionPath: started.definition.path,
      simulated: started.provider === 'simulated',
      providerNotice: providerNotice(started.provider, 'journal', env),
      resume: {
        events: contents.events.length,
        truncatedBytes: 0,
        definitionChanged: false,
        ended: true,
        budget,
      },
    };
    return { info, execute: async () => recordedOutcome(ended), close: () => {} };
  }

  const permissions = resumedPermissions(started, journalPath, request.permissions);
  const { definition, missing } = await resumedDefinition(started, cwd);
  const choice: ProviderChoice = providerByName(
    started.provider,
    'journal',
    env,
    request.providerTimeouts,
    request.simulatedLatencyMs,
  );
  const mcpServers = await runMcpServers({ cwd, mcpServers: {}, mcpProjectFile: true });
  const writer = JournalWriter.open(journalPath);
  const info: SessionInfo = {
    ...base,
    definitionPath: definition.path,
    simulated: choice.simulated,
    providerNotice: choice.notice,
    resume: {
      events: contents.events.length,
      truncatedBytes: writer.truncatedBytes,
      definitionChanged: !missing && definitionHash(definition) !== started.definition.hash,
      ...(missing ? { definitionMissing: true } : {}),
      ended: false,
      budget,
    },
  };
  return session(info, writer, (sink, options) =>
    runAgent({
      agentId: started.agentId,
      ...(started.parentId === undefined ? {} : { parentId: started.parentId }),
      definition,
      task: started.task,
      context: started.context,
      metadata: started.metadata,
      provider: choice.provider,
      model: started.model,
      cwd,
      journal: sink,
      mcpServers,
      resumeFrom: contents.events,
      truncatedBytes: writer.truncatedBytes,
      ...(request.registry ? { registry: request.registry } : {}),
      ...(started.limits ? { limits: started.limits } : {}),
      ...(permissions ? { permissions } : {}),
      ...executeExtras(options),
    }),
  );
}

/** The Started metadata that records a command line's permissions: none when it gave none. */
function recordedPermissions(permissions: AgentPermissions | undefined): Record<string, unknown> {
  if (permissions === undefined) return {};
  const { approvalTimeoutMs, onTimeout: _onTimeout, ...rules } = permissions;
  return {
    ...(Object.keys(rules).length > 0 ? { permissions: rules } : {}),
    ...(approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs }),
  };
}

/**
 * The permissions a resumed agent runs with: those its command line started it with (Started
 * metadata, see {@link recordedPermissions}), then `extra` (the resume's flags). A recorded value
 * that does not read as permissions is refused (UserError `journal_metadata`) rather than dropped:
 * dropping it could run calls the original run asked about.
 */
function resumedPermissions(
  started: EventOf<'Started'>,
  journal: string,
  extra: AgentPermissions | undefined,
): AgentPermissions | undefined {
  const problems: string[] = [];
  const recorded = readRunPermissions(
    started.metadata.permissions,
    ['metadata', 'permissions'],
    (path, message) => problems.push(`${path.join('.')}: ${message}`),
  );
  const timeout = started.metadata.approvalTimeoutMs;
  if (timeout !== undefined && !(typeof timeout === 'number' && Number.isFinite(timeout) && timeout >= 0))
    problems.push(
      `metadata.approvalTimeoutMs: expected a non-negative number, got ${describeValue(timeout)}`,
    );
  if (problems.length > 0) {
    throw new UserError(
      'journal_metadata',
      `Expected the permissions recorded in ${journal}'s Started event to read, but ${problems.join('; ')}`,
      { path: journal, problems },
    );
  }
  const { approvalTimeoutMs: extraTimeout, onTimeout, ...extraRules } = extra ?? {};
  const rules = mergeRunPermissions(recorded, Object.keys(extraRules).length > 0 ? extraRules : undefined);
  const approvalTimeoutMs = extraTimeout ?? (typeof timeout === 'number' ? timeout : undefined);
  if (rules === undefined && approvalTimeoutMs === undefined && onTimeout === undefined) return undefined;
  return {
    ...rules,
    ...(approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs }),
    ...(onTimeout === undefined ? {} : { onTimeout }),
  };
}

/**
 * The definition to resume with: the one discovery finds by the recorded name, else (its file was
 * deleted or renamed since) the one the journal recorded, which is what the agent runs either way
 * (src/loop/pinning.ts). Throws `unknown_agent` only when the journal recorded no text to run.
 */
async function resumedDefinition(
  started: EventOf<'Started'>,
  cwd: string,
): Promise<{ readonly definition: AgentDefinition; readonly missing: boolean }> {
  try {
    return { definition: await getAgent(started.definition.name, { cwd }), missing: false };
  } catch (error) {
    if (!(error instanceof UserError && error.code === 'unknown_agent')) throw error;
    const definition = await recordedDefinition(started);
    if (definition === undefined) throw error;
    return { definition, missing: true };
  }
}

type Start = (sink: JournalSink, options: ExecuteOptions) => Promise<AgentOutcome>;

/** The run options `execute` was given: its signal, a session's channels, the agent's events. */
function executeExtras(options: ExecuteOptions): Pick<RunAgentOptions, 'signal' | 'channels' | 'onEvent'> {
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.channels || options.requestApproval
      ? {
          channels: {
            ...options.channels,
            ...(options.requestApproval ? { requestApproval: options.requestApproval } : {}),
          },
        }
      : {}),
    ...(options.onAgentEvent ? { onEvent: options.onAgentEvent } : {}),
  };
}

function session(info: SessionInfo, writer: JournalWriter, start: Start): PreparedSession {
  let used = false;
  return {
    info,
    async execute(options = {}) {
      if (used)
        throw new SystemError('session_used', `Expected a fresh session, but ${info.agentId} already ran`);
      used = true;
      const onEvent = options.onEvent;
      const sink: JournalSink = {
        append(input: AuditEventInput) {
          if (onEvent) onEvent(writer.appendEvent(input));
          else writer.append(input);
        },
      };
      try {
        return await start(sink, options);
      } finally {
        writer.close();
      }
    },
    close: () => writer.close(),
  };
}

function recordedOutcome(ended: EventOf<'Completed'> | EventOf<'Failed'>): AgentOutcome {
  const totals = {
    usage: ended.usage,
    costUsd: ended.costUsd,
    rounds: ended.rounds,
    ...(ended.steps === undefined ? {} : { steps: ended.steps }),
  };
  if (ended.type === 'Completed') {
    return {
      status: 'completed',
      agentId: ended.agentId,
      answer: ended.answer,
      result: ended.result,
      ...totals,
    };
  }
  return { status: 'failed', agentId: ended.agentId, reason: ended.reason, error: ended.error, ...totals };
}

/** `20261130T070029Z`: sorts by time and is safe in file names everywhere. */
function timestamp(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/**
 * Makes the directory of the journal at `path` and those missing above it; returns the first one
 * made, undefined when it existed. One that cannot be made is `journal_io`.
 */
function journalDirectory(path: string): string | undefined {
  try {
    return makeDirectories(dirname(path));
  } catch (error) {
    throw new SystemError(
      'journal_io',
      `Expected a journal file path in a directory that can be created, could not create ${dirname(path)}: ${ioErrorText(error)}`,
      { path, errno: (error as NodeJS.ErrnoException).code },
      { cause: error },
    );
  }
}

/**
 * What is at `path`, undefined when nothing is. A path the journal cannot be created at (a
 * component of it is a file: ENOTDIR; a directory that cannot be searched: EACCES) is the
 * caller's `--journal`, refused as the journal's open would refuse it (`journal_io`), not a crash.
 */
function journalStat(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    throw new SystemError(
      'journal_io',
      `Expected a journal file path in a directory, could not use ${path}: ${ioErrorText(error)}`,
      { path, errno },
      { cause: error },
    );
  }
}
