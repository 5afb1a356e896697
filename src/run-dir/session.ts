/**
 * One fan-out session: runs the given plan entries with a Supervisor whose journals go to the run
 * directory, appends a result line as each agent ends (agents spawned by agents included), and
 * writes the summary at the end. `troupe fanout`, `troupe resume` and `troupe demo` all run
 * through here; they differ only in which entries they hand over.
 *
 * When the plan declares scorers, each plan entry is scored as it ends, before its result line is
 * written (so the line carries its scores). Judge agents run on the same Supervisor; they get no
 * result line of their own and no progress events, and the Supervisor closes only after every
 * pending score is in.
 */

import { followSignal } from '../abort.ts';
import type { AgentDefinition } from '../definition/types.ts';
import type { EngineDescription } from '../engines/engine.ts';
import type { JobsUnserved } from '../engines/events.ts';
import { type SerializedError, serializeError } from '../errors.ts';
import type { JudgeSpawner } from '../eval/judge.ts';
import type { Scoring } from '../eval/scoring.ts';
import { failedOutcome, ownSpend } from '../loop/outcome.ts';
import type { AgentOutcome } from '../loop/types.ts';
import { mergeModelSettings } from '../providers/model-settings.ts';
import type { SpawnSpec } from '../supervisor/fanout.ts';
import type { SupervisorOptions } from '../supervisor/options.ts';
import { type RunBudgetCode, spentBudget } from '../supervisor/run-budget.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import type { RunInputs } from './plan-types.ts';
import { simulatedNotice } from './provider-choice.ts';
import { replaySourceOf } from './replay-plan.ts';
import { ResultStore } from './result-store.ts';
import { type ResultLine, resultLine } from './results.ts';
import type { RunDirWriter } from './run-dir.ts';
import type { RunEventSink } from './run-events.ts';
import type { LoggedCause, RunLogEvent } from './run-log.ts';
import { budgetNotices, type PlannedRun, type RunPlan, repeatedIdNotices, runLimitsOf } from './run-plan.ts';
import { createRunScoring, judgeSessionNumber, scoreInputOf } from './run-scoring.ts';
import { DENY_UNATTENDED, listenForApprovals, type SessionApprover } from './session-approvals.ts';
import {
  type RunSession,
  type RunSummary,
  type SummaryLine,
  summarize,
  summaryHead,
  type Unended,
} from './summary.ts';
import { inputsOf } from './task-rows.ts';
import { type UnendedBounds, unendedAttemptIds } from './timeline.ts';

/** A run log event before its time is set. */
type RunLogEventBody = RunLogEvent extends infer E ? (E extends unknown ? Omit<E, 'ts'> : never) : never;

function causeOf(cause: SerializedError): LoggedCause {
  return { code: cause.code, message: cause.message };
}

/** One plan entry to run in this session. */
export interface WorkItem {
  readonly run: PlannedRun;
  /** Agent id of this attempt. */
  readonly agentId: string;
  readonly attempt: number;
  /** Continue from the agent's journal (it started in an earlier session and did not end). */
  readonly resume: boolean;
  /** A failed attempt whose journal this attempt continues (`troupe resume --retry-failed`). */
  readonly retryOf?: string;
}

/** Options of {@link FanoutSession}. */
export interface SessionOptions {
  readonly plan: RunPlan;
  readonly writer: RunDirWriter;
  readonly work: readonly WorkItem[];
  readonly kind: Exclude<RunSession['kind'], 'score'>;
  /**
   * Result lines already in the run directory (what the summary needs of each): a ResultStore is
   * kept as it is, and the session adds its own lines to it.
   */
  readonly existing?: ResultStore | Iterable<ResultLine | SummaryLine>;
  /**
   * Result lines recovered from journals (`troupe resume`), not yet in the run directory: scored
   * (when the plan has scorers) and appended before anything runs.
   */
  readonly recovered?: readonly ResultLine[];
  /** Sessions recorded by earlier commands. */
  readonly previousSessions?: readonly RunSession[];
  /** Definitions in addition to the ones discovered from the plan's cwd. */
  readonly definitions?: readonly AgentDefinition[];
  /**
   * Aborting it cancels every running agent; finished results stay. Plan entries not spawned yet
   * (queued behind the plan's concurrency) are not spawned: they get no result line, so they
   * count as not run and `troupe resume` starts them.
   */
  readonly signal?: AbortSignal;
  readonly onEvent?: RunEventSink;
  /** Supervisor options beyond the ones the plan sets (tests: heartbeats, grace period). */
  readonly supervisor?: Partial<SupervisorOptions>;
  /**
   * Decides the agents' approval requests (a terminal prompt, `--approve` rules).
   * @default every request is denied: there is nobody to ask
   */
  readonly approver?: SessionApprover;
  /**
   * The bounds of the unended count's reads of the journals (tests: a small `maxHeadBytes` in
   * place of 64 MiB). @default MAX_STARTED_HEAD_BYTES
   */
  readonly unendedBounds?: UnendedBounds;
}

/** What a session ended with. */
export interface SessionResult {
  readonly summary: RunSummary;
  readonly interrupted: boolean;
  /**
   * The first {@link UNKNOWN_JOURNALS_NAMED} of the journals counted in the summary's
   * `counts.nested.unknown` (file names in the run's journals folder); empty when none.
   */
  readonly unknownJournals: readonly string[];
}

/** Journals counted in `counts.nested.unknown` a session names in its result at most. */
export const UNKNOWN_JOURNALS_NAMED = 5;

interface Tracked {
  readonly index: number | null;
  readonly agent: string;
  readonly parentId: string | undefined;
  readonly attempt: number;
  readonly label: string | undefined;
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  hostId: number | undefined;
  startedAt: string | undefined;
  restarts: number;
}

/** A running fan-out session. */
export class FanoutSession {
  readonly #options: SessionOptions;
  readonly #tracked = new Map<string, Tracked>();
  /**
   * What the summary needs of each result line so far, in columns (see ResultStore): not the
   * lines themselves, nor an object per line.
   */
  readonly #lines: ResultStore;
  readonly #startedAt = new Date();
  /** The first journals the last unended count could not read (`SessionResult.unknownJournals`). */
  #unknownJournals: readonly string[] = [];
  /** Agent ids of judge agents (scorers), which are not plan entries nor nested agents. */
  readonly #judges = new Set<string>();
  /** Scores being computed for ended agents; the Supervisor is closed only once they are in. */
  readonly #pending = new Set<Promise<void>>();
  #scoring: Scoring | undefined;
  /** Aborts with the caller's signal, or when the run's budget is spent. */
  readonly #controller = new AbortController();
  /** Tokens and known cost of every agent of the run so far, earlier sessions included. */
  #usedTokens = 0;
  #usedCostUsd = 0;
  #budgetSpent: string | undefined;
  #finished = false;

  constructor(options: SessionOptions) {
    this.#options = options;
    const existing = options.existing ?? [];
    this.#lines =
      existing instanceof ResultStore ? existing : new ResultStore(options.plan.idPrefix, existing);
    for (const line of this.#lines) {
      // A retry's line holds the requests of the attempt it continues too: they count once.
      const own = ownSpend(line);
      this.#usedTokens += own.usage.inputTokens + own.usage.outputTokens;
      this.#usedCostUsd += own.costUsd ?? 0;
    }
  }

  /**
   * What the summary needs of each result line so far (earlier sessions' included), made anew on
   * each call (the session holds them in columns); the lines themselves are in `results.jsonl`.
   */
  get lines(): readonly SummaryLine[] {
    return [...this.#lines];
  }

  /**
   * Runs the work to the end, until the signal aborts, or until the run's budget is spent; then
   * the running agents are cancelled.
   */
  async run(): Promise<SessionResult> {
    const { plan, work } = this.#options;
    const unfollow = followSignal(this.#options.signal, this.#controller);
    try {
      return await this.#run(plan, work);
    } finally {
      unfollow();
    }
  }

  async #run(plan: RunPlan, work: readonly WorkItem[]): Promise<SessionResult> {
    const signal = this.#controller.signal;
    const emit = this.#options.onEvent ?? (() => {});
    const runLimits = runLimitsOf(plan);
    // A resumed run whose budget is already spent runs nothing more (said after the header).
    this.#checkBudget(runLimits, () => {});
    const log = (event: RunLogEventBody): void =>
      this.#options.writer.log({ ts: new Date().toISOString(), ...event } as RunLogEvent);
    log({ type: 'session', event: 'started', kind: this.#options.kind });
    // Until this session ends, summary.json says it has not: a kill leaves no stale "complete".
    this.writeSummary(true, true);
    const recovered = this.#options.recovered ?? [];
    const needsSupervisor = work.length > 0 && !signal.aborted;
    let supervisor: Supervisor | undefined;
    const spawner: JudgeSpawner = {
      spawn: (agent, options) => {
        if (supervisor === undefined)
          throw new Error('no Supervisor is running to judge with (the run was cancelled before it started)');
        this.#judges.add(options.id);
        return supervisor.spawn(agent, options);
      },
    };
    // Judge ids get the session number after the first session, so a judge cut off by a kill is
    // never continued by a later session's judge of the same item (a session killed outright is
    // not in the summary: the judge journals it left count too).
    const earlier = judgeSessionNumber(
      this.#options.writer.paths.journals,
      plan.scorers,
      this.#options.previousSessions?.length ?? 0,
    );
    this.#scoring = await createRunScoring(plan, {
      definitions: this.#options.definitions ?? [],
      spawner,
      ...(earlier > 0 ? { judgeIdSuffix: `-s${earlier}` } : {}),
      signal,
    });
    if (needsSupervisor || (recovered.length > 0 && this.#scoring?.hasJudges === true)) {
      supervisor = new Supervisor({
        threads: plan.threads,
        isolation: plan.isolation,
        ...(plan.backend === 'redis' ? { backend: 'redis' } : {}),
        providers: { [plan.provider.name]: plan.provider.config },
        defaultProvider: plan.provider.name,
        ...(plan.defaultModel === undefined ? {} : { defaultModel: plan.defaultModel }),
        ...(plan.modelMap === undefined ? {} : { modelMap: plan.modelMap }),
        ...(plan.mcpServers === undefined ? {} : { mcpServers: plan.mcpServers }),
        journalDir: this.#options.writer.paths.journals,
        cwd: plan.cwd,
        definitions: this.#options.definitions ?? [],
        toolModules: plan.toolModules,
        ...(plan.permissions === undefined ? {} : { permissions: plan.permissions }),
        ...(plan.approvals === undefined ? {} : { approvals: plan.approvals }),
        runLimits: this.#remainingBudget(runLimits),
        ...this.#options.supervisor,
      });
    }
    let engine: EngineDescription = { backend: 'threads', threads: plan.threads };
    try {
      if (supervisor) engine = await supervisor.describe();
    } catch (error) {
      await supervisor?.close();
      throw error;
    }
    emit({
      type: 'run',
      runId: plan.runId,
      runDir: this.#options.writer.paths.root,
      kind: this.#options.kind,
      ...(plan.replay === undefined ? {} : { replayOf: plan.replay.of }),
      provider: plan.provider.name,
      model: plan.model ?? plan.defaultModel ?? null,
      simulated: plan.provider.simulated,
      ...(plan.provider.simulated ? { notice: simulatedNotice(plan.provider.source) } : {}),
      planned: plan.runs.length,
      toRun: work.length,
      threads: plan.threads,
      engine,
      concurrency: plan.concurrency,
      runLimits,
      usedTokens: this.#usedTokens,
      notices: [...budgetNotices(plan), ...repeatedIdNotices(plan)],
    });
    if (this.#budgetSpent) emit({ type: 'budget', code: 'run_token_budget', message: this.#budgetSpent });
    if (supervisor) {
      this.#listen(supervisor, runLimits, log);
      listenForApprovals(supervisor, {
        approver: this.#options.approver ?? DENY_UNATTENDED,
        root: this.#options.writer.paths.root,
        ref: (agentId) => {
          const tracked = this.#tracked.get(agentId);
          return { agentId, index: tracked?.index ?? null, agent: tracked?.agent ?? 'unknown' };
        },
        emit,
        skip: (agentId) => this.#judges.has(agentId),
      });
    }
    try {
      for (const line of recovered) this.#track(this.#finishLine(line));
      if (supervisor !== undefined && needsSupervisor) {
        const fanOut = supervisor.fanOut(
          this.#specs(work),
          // Result lines come from the Supervisor's events: kept, every outcome of a 20,000-item
          // data set stayed in memory until the run ended.
          { concurrency: plan.concurrency, signal, keepResults: false },
        );
        // What the fan-out yields are the entries refused at spawn (a task over
        // MAX_SPAWN_INPUT_BYTES): no agent, so no event; without these lines they were silently
        // counted as not run. Each is written as it is refused, between the lines of the agents
        // that ended before and after it (taken from all() at the end, it came after every one).
        for await (const refused of fanOut) {
          const item = work[refused.index];
          if (item !== undefined) this.#record({ ...refused.outcome, agentId: item.agentId });
        }
        await fanOut.all();
      }
      while (this.#pending.size > 0) await Promise.all([...this.#pending]);
    } finally {
      // Cancels agents spawned by agents that outlived their parents, then stops the engine.
      await supervisor?.close();
      this.#options.approver?.close();
    }
    const interrupted = this.#options.signal?.aborted ?? false;
    log({ type: 'session', event: 'ended', kind: this.#options.kind, interrupted });
    const summary = this.writeSummary(interrupted);
    this.#finished = true;
    const { paths } = this.#options.writer;
    emit({ type: 'summary', runDir: paths.root, file: paths.summary, summary: summaryHead(summary) });
    return { summary, interrupted, unknownJournals: this.#unknownJournals };
  }

  /**
   * Writes `summary.json` from the results so far (synchronously: the second Ctrl-C calls it just
   * before the process exits), with the agents started and not ended as interrupted. `open`: as
   * the session starts, saying it has not ended (`RunSession.open`).
   */
  writeSummary(interrupted: boolean, open = false): RunSummary {
    const startedAt = this.#startedAt.toISOString();
    const session: RunSession = {
      kind: this.#options.kind,
      startedAt,
      endedAt: open ? startedAt : new Date().toISOString(),
      interrupted: interrupted || open,
      ...(open ? { open: true } : {}),
    };
    const summary = summarize(
      this.#options.plan,
      this.#lines,
      [...(this.#options.previousSessions ?? []), session],
      new Date(),
      this.#budgetSpent,
      this.#unended(),
    );
    if (!this.#finished) this.#options.writer.writeSummary(summary);
    return summary;
  }

  /**
   * The agents that started and have no line yet: this session's, and those its journals show
   * by the rule `troupe score` and `troupe report` count with ({@link unendedAttemptIds}), so an
   * agent an earlier session left unended and this one did not finish (a resume cut short before
   * it got there, a child no resume reaches) is counted interrupted here too, not dropped until a
   * recount. Only the first line of each journal is read (at most MAX_STARTED_HEAD_BYTES), at the
   * session's start and end: a plan entry's journal whose whole first line is longer counts as
   * started, one whose first line is torn does not, as in the timeline; a journals folder that
   * cannot be listed leaves this session's own.
   */
  #unended(): Unended {
    const entries = new Set<number>();
    const nested = new Set<string>();
    let unknown = 0;
    const named: string[] = [];
    for (const [agentId, tracked] of this.#tracked) {
      if (tracked.startedAt === undefined || this.#judges.has(agentId)) continue;
      if (tracked.index === null) nested.add(agentId);
      else entries.add(tracked.index);
    }
    try {
      const { plan, writer } = this.#options;
      const found = unendedAttemptIds(
        { plan, paths: writer.paths, results: this.#lines },
        this.#options.unendedBounds,
      );
      for (const index of found.entries) entries.add(index);
      for (const agentId of found.nested) if (!this.#judges.has(agentId)) nested.add(agentId);
      // This session's own agents are counted by what it knows of them.
      for (const agentId of found.unknown) {
        if (this.#tracked.has(agentId)) continue;
        unknown += 1;
        if (named.length < UNKNOWN_JOURNALS_NAMED) named.push(`${agentId}.jsonl`);
      }
    } catch {
      // summary.json is still written; `troupe report` says which journal is damaged.
    }
    this.#unknownJournals = named;
    return { entries, nested: nested.size, ...(unknown > 0 ? { unknown } : {}) };
  }

  /**
   * The work's spawn specs, each built (and its agent tracked) only when the fan-out has a free
   * slot for it: built up front, a 20,000-item data set held 20,000 specs and tracking entries
   * before its first agent started. Items never reached (Ctrl-C, a spent budget) are never built.
   * A tasks-file row's inputs are read from the run directory's copy here, and not kept after; a
   * row that cannot be read (a damaged `tasks.jsonl`) fails its entry alone, `invalid_request`
   * with the `run_dir_io` error, and no agent is spawned for it.
   */
  *#specs(work: readonly WorkItem[]): Generator<SpawnSpec> {
    const { plan, writer } = this.#options;
    for (const item of work) {
      let inputs: RunInputs | undefined;
      let unreadable: unknown;
      try {
        inputs = inputsOf(plan, writer.paths.root, item.run);
      } catch (error) {
        unreadable = error;
      }
      this.#tracked.set(item.agentId, {
        index: item.run.index,
        agent: item.run.agent,
        parentId: undefined,
        attempt: item.attempt,
        label: item.run.label,
        metadata: inputs?.metadata,
        hostId: undefined,
        startedAt: undefined,
        restarts: 0,
      });
      if (inputs === undefined) {
        this.#record(failedOutcome(item.agentId, 'invalid_request', serializeError(unreadable)));
        continue;
      }
      yield this.#spec(item, inputs);
    }
  }

  #spec(item: WorkItem, inputs: RunInputs): SpawnSpec {
    const { plan } = this.#options;
    const { run } = item;
    // The plan's settings (with the command line's over them), then the run's own: the spawn
    // layer, over the definition's.
    const modelSettings = mergeModelSettings(plan.modelSettings, run.modelSettings);
    // `resume` is passed through to Supervisor.spawn, which continues the agent from its journal.
    const spec: SpawnSpec & { readonly resume?: boolean } = {
      agent: run.agent,
      task: inputs.task,
      context: inputs.context,
      metadata: inputs.metadata,
      id: item.agentId,
      provider: plan.provider.name,
      ...(plan.model === undefined ? {} : { model: plan.model }),
      ...(plan.limits === undefined ? {} : { limits: plan.limits }),
      ...(Object.keys(modelSettings).length === 0 ? {} : { modelSettings }),
      ...(item.resume ? { resume: true } : {}),
      ...(item.retryOf === undefined ? {} : { retryOf: item.retryOf }),
      ...(plan.replay === undefined ? {} : { replay: replaySourceOf(plan.replay, run.index) }),
    };
    return spec;
  }

  /**
   * What is left of the run's budget once earlier sessions' usage is counted, as the Supervisor's
   * `runLimits`: on the redis engine the workers hold every agent to it before each model request,
   * where the CLI's own count below only acts once a usage event has crossed Redis. The CLI still
   * counts (the same receipts, so both are spent by the same request) and aborts the fan-out on
   * the same event, so items not yet spawned stay unrun for `troupe resume` instead of failing
   * the Supervisor's later spawns.
   */
  #remainingBudget(limits: ReturnType<typeof runLimitsOf>): ReturnType<typeof runLimitsOf> {
    // 0 means unlimited to the Supervisor: a budget spent already leaves the least it counts.
    const left = (max: number, used: number, least: number): number =>
      max > 0 ? Math.max(max - used, least) : 0;
    return {
      maxTotalTokens: left(limits.maxTotalTokens, this.#usedTokens, 1),
      maxCostUsd: left(limits.maxCostUsd, this.#usedCostUsd, Number.MIN_VALUE),
    };
  }

  /** Stops the run once its token or cost budget is spent (0 = unlimited). */
  #checkBudget(limits: ReturnType<typeof runLimitsOf>, emit: RunEventSink): void {
    if (this.#budgetSpent !== undefined) return;
    const code = spentBudget(limits, this.#usedTokens, this.#usedCostUsd);
    const message =
      code === 'run_token_budget'
        ? `the run used ${this.#usedTokens} tokens; its budget (runLimits.maxTotalTokens, --max-run-tokens) is ${limits.maxTotalTokens}`
        : `the run spent $${this.#usedCostUsd.toFixed(4)}; its budget (runLimits.maxCostUsd) is $${limits.maxCostUsd}`;
    if (code === undefined) return;
    this.#stopForBudget(code, message, emit);
  }

  #stopForBudget(code: RunBudgetCode, message: string, emit: RunEventSink): void {
    this.#budgetSpent = message;
    if (this.#finished) return;
    emit({ type: 'budget', code, message });
    this.#controller.abort(new Error(`the run's budget is spent: ${message}`));
  }

  #listen(
    supervisor: Supervisor,
    runLimits: ReturnType<typeof runLimitsOf>,
    log: (event: RunLogEventBody) => void,
  ): void {
    const forward = this.#options.onEvent ?? (() => {});
    // Judge agents are the scorers' business: no progress events, no result lines (their tokens
    // still count against the run's budget).
    const emit = (event: Parameters<typeof forward>[0]): void => {
      if ('agentId' in event && this.#judges.has(event.agentId)) return;
      forward(event);
    };
    const ref = (agentId: string) => {
      const tracked = this.#tracked.get(agentId);
      return { agentId, index: tracked?.index ?? null, agent: tracked?.agent ?? 'unknown' };
    };
    supervisor.on('agent:spawned', (event) => {
      if (this.#judges.has(event.agentId)) return;
      if (!this.#tracked.has(event.agentId)) {
        this.#tracked.set(event.agentId, {
          index: null,
          agent: event.agent,
          parentId: event.parentId,
          attempt: 1,
          label: undefined,
          metadata: event.metadata,
          hostId: undefined,
          startedAt: undefined,
          restarts: 0,
        });
      }
      emit({ type: 'spawned', ...ref(event.agentId), parentId: event.parentId ?? null, task: event.task });
    });
    supervisor.on('agent:started', (event) => {
      const tracked = this.#tracked.get(event.agentId);
      if (tracked) {
        tracked.hostId = event.hostId;
        tracked.startedAt ??= new Date().toISOString();
      }
      if (!this.#judges.has(event.agentId))
        log({ type: 'agent', agentId: event.agentId, hostId: event.hostId, resumed: event.resumed });
      emit({ type: 'started', ...ref(event.agentId), hostId: event.hostId, resumed: event.resumed });
    });
    supervisor.on('agent:round', (event) =>
      emit({
        type: 'round',
        ...ref(event.agentId),
        round: event.round,
        estimatedTokens: event.estimatedTokens,
      }),
    );
    supervisor.on('agent:tool', (event) =>
      emit({ type: 'tool', ...ref(event.agentId), round: event.round, tool: event.tool, ok: event.ok }),
    );
    supervisor.on('agent:usage', (event) => {
      emit({
        type: 'usage',
        ...ref(event.agentId),
        inputTokens: event.inputTokens,
        outputTokens: event.outputTokens,
        estimated: event.estimated,
        ...(event.usage.estimatedSide === undefined ? {} : { estimatedSide: event.usage.estimatedSide }),
        costUsd: event.costUsd,
        ...(event.unreported === true ? { unreported: true } : {}),
      });
      this.#usedTokens += event.inputTokens + event.outputTokens;
      this.#usedCostUsd += event.costUsd ?? 0;
      this.#checkBudget(runLimits, emit);
    });
    // The Supervisor counts the same receipts against what is left of the budget, so it is spent
    // on the same event; should a sum round the other way, its count stops the fan-out as well.
    supervisor.on('supervisor:budget', (event) => {
      if (this.#budgetSpent === undefined) this.#stopForBudget(event.code, event.message, emit);
    });
    supervisor.on('agent:text', (event) => emit({ type: 'text', ...ref(event.agentId), text: event.text }));
    supervisor.on('agent:waiting', (event) => emit({ type: 'waiting', ...ref(event.agentId) }));
    supervisor.on('agent:instructed', (event) =>
      emit({ type: 'instructed', ...ref(event.agentId), text: event.text }),
    );
    supervisor.on('agent:restarted', (event) => {
      const tracked = this.#tracked.get(event.agentId);
      if (tracked) tracked.restarts = event.restart;
      if (!this.#judges.has(event.agentId))
        log({
          type: 'restarted',
          agentId: event.agentId,
          restart: event.restart,
          cause: causeOf(event.cause),
        });
      emit({ type: 'restarted', ...ref(event.agentId), restart: event.restart, cause: event.cause });
    });
    const ended = (event: { agentId: string; outcome: AgentOutcome }) => this.#record(event.outcome);
    supervisor.on('agent:completed', ended);
    supervisor.on('agent:failed', ended);
    supervisor.on('thread:started', (event) => {
      log({ type: 'thread', event: 'started', hostId: event.hostId });
      emit({ type: 'thread', event: 'started', hostId: event.hostId });
    });
    supervisor.on('thread:crashed', (event) => {
      log({
        type: 'thread',
        event: 'crashed',
        hostId: event.hostId,
        cause: causeOf(event.cause),
        agents: event.agents.filter((agentId) => !this.#judges.has(agentId)),
      });
      emit({ type: 'thread', event: 'crashed', hostId: event.hostId });
    });
    supervisor.on('thread:respawned', (event) => {
      log({ type: 'thread', event: 'respawned', hostId: event.hostId });
      emit({ type: 'thread', event: 'respawned', hostId: event.hostId });
    });
    supervisor.on('provider:backoff', (event) => {
      log({ type: 'backoff', provider: event.provider, retryAfterMs: event.retryAfterMs });
      emit({ type: 'backoff', provider: event.provider, retryAfterMs: event.retryAfterMs });
    });
    supervisor.on('jobs:unserved', (event) => emit({ type: 'notice', text: unservedNotice(event) }));
  }

  #record(outcome: AgentOutcome): void {
    const tracked = this.#tracked.get(outcome.agentId);
    if (!tracked || this.#judges.has(outcome.agentId)) return;
    const line = resultLine(outcome, {
      index: tracked.index,
      parentId: tracked.parentId,
      agent: tracked.agent,
      attempt: tracked.attempt,
      label: tracked.label,
      metadata: tracked.metadata,
      hostId: tracked.hostId,
      restarts: tracked.restarts,
      startedAt: tracked.startedAt,
      endedAt: new Date().toISOString(),
    });
    // Nothing more is said of an agent that ended: its entry would only hold memory until the run ends.
    this.#tracked.delete(outcome.agentId);
    this.#track(this.#finishLine(line));
  }

  #track(task: Promise<void>): void {
    this.#pending.add(task);
    // Failures surface where the pending tasks are awaited in run(); this only forgets the task.
    const forget = (): void => {
      this.#pending.delete(task);
    };
    task.then(forget, forget);
  }

  /** Scores a plan entry's line (when the plan has scorers), then writes it. */
  async #finishLine(line: ResultLine): Promise<void> {
    const { plan, writer } = this.#options;
    const run = line.index === null ? undefined : plan.runs[line.index];
    const scoring = this.#scoring;
    // A row that cannot be read leaves its line unscored (its entry already failed for it).
    const inputs =
      scoring !== undefined && run !== undefined && run.index === line.index
        ? readableInputs(plan, writer.paths.root, run)
        : undefined;
    const scored =
      scoring !== undefined && run !== undefined && inputs !== undefined
        ? { ...line, scores: await scoring.score(scoreInputOf(run, inputs, line)) }
        : line;
    this.#options.writer.append(scored);
    this.#lines.add(scored);
    this.#options.onEvent?.({ type: 'ended', line: scored });
  }
}

/** The inputs of `run`, or undefined when its row cannot be read. */
function readableInputs(plan: RunPlan, root: string, run: PlannedRun): RunInputs | undefined {
  try {
    return inputsOf(plan, root, run);
  } catch {
    return undefined;
  }
}

/** What to tell the user when no worker takes the run's agents, and how to start one. */
export function unservedNotice(event: JobsUnserved): string {
  const flags = [
    ...(event.queue === 'troupe-agents' ? [] : [`--queue ${event.queue}`]),
    ...(event.prefix === 'troupe' ? [] : [`--prefix ${event.prefix}`]),
  ];
  const workers = `${event.workers} worker${event.workers === 1 ? '' : 's'} connected`;
  return (
    `no worker has taken this run's agents for ${Math.round(event.waitedMs / 1000)} s ` +
    `(${event.waiting} waiting on queue ${event.queue} at ${event.url}; ${workers}). ` +
    `Start one: TROUPE_REDIS_URL=${event.url} npx troupe worker${flags.map((flag) => ` ${flag}`).join('')}`
  );
}
