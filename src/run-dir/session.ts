/**
 * One fan-out session: runs the given plan entries with a Supervisor whose journals go to the run
 * directory, appends a result line as each agent ends (agents spawned by agents included), and
 * writes the summary at the end. `troupe fanout`, `troupe resume` and `troupe demo` all run
 * through here; they differ only in which entries they hand over.
 */
import type { AgentDefinition } from '../definition/types.ts';
import type { AgentOutcome } from '../loop/types.ts';
import type { SpawnSpec } from '../supervisor/fanout.ts';
import type { SupervisorOptions } from '../supervisor/options.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { SIMULATED_NOTICE } from './provider-choice.ts';
import { type ResultLine, resultLine } from './results.ts';
import type { RunDirWriter } from './run-dir.ts';
import type { RunEventSink } from './run-events.ts';
import type { PlannedRun, RunPlan } from './run-plan.ts';
import { type RunSession, type RunSummary, summarize } from './summary.ts';

/** One plan entry to run in this session. */
export interface WorkItem {
  readonly run: PlannedRun;
  /** Agent id of this attempt. */
  readonly agentId: string;
  readonly attempt: number;
  /** Continue from the agent's journal (it started in an earlier session and did not end). */
  readonly resume: boolean;
}

/** Options of {@link FanoutSession}. */
export interface SessionOptions {
  readonly plan: RunPlan;
  readonly writer: RunDirWriter;
  readonly work: readonly WorkItem[];
  readonly kind: RunSession['kind'];
  /** Result lines already in the run directory. */
  readonly existing?: readonly ResultLine[];
  /** Sessions recorded by earlier commands. */
  readonly previousSessions?: readonly RunSession[];
  /** Definitions in addition to the ones discovered from the plan's cwd. */
  readonly definitions?: readonly AgentDefinition[];
  /** Aborting it cancels every running agent; finished results stay. */
  readonly signal?: AbortSignal;
  readonly onEvent?: RunEventSink;
  /** Supervisor options beyond the ones the plan sets (tests: heartbeats, grace period). */
  readonly supervisor?: Partial<SupervisorOptions>;
}

/** What a session ended with. */
export interface SessionResult {
  readonly summary: RunSummary;
  readonly interrupted: boolean;
}

interface Tracked {
  readonly index: number | null;
  readonly agent: string;
  readonly parentId: string | undefined;
  readonly attempt: number;
  readonly label: string | undefined;
  hostId: number | undefined;
  startedAt: string | undefined;
  restarts: number;
}

/** A running fan-out session. */
export class FanoutSession {
  readonly #options: SessionOptions;
  readonly #tracked = new Map<string, Tracked>();
  readonly #lines: ResultLine[];
  readonly #startedAt = new Date();
  #finished = false;

  constructor(options: SessionOptions) {
    this.#options = options;
    this.#lines = [...(options.existing ?? [])];
    for (const item of options.work) {
      this.#tracked.set(item.agentId, {
        index: item.run.index,
        agent: item.run.agent,
        parentId: undefined,
        attempt: item.attempt,
        label: item.run.label,
        hostId: undefined,
        startedAt: undefined,
        restarts: 0,
      });
    }
  }

  /** Result lines so far (earlier sessions' included). */
  get lines(): readonly ResultLine[] {
    return this.#lines;
  }

  /** Runs the work to the end (or until the signal aborts and the agents are cancelled). */
  async run(): Promise<SessionResult> {
    const { plan, work, signal } = this.#options;
    const emit = this.#options.onEvent ?? (() => {});
    emit({
      type: 'run',
      runId: plan.runId,
      runDir: this.#options.writer.paths.root,
      kind: this.#options.kind,
      provider: plan.provider.name,
      model: plan.model ?? plan.defaultModel ?? null,
      simulated: plan.provider.simulated,
      ...(plan.provider.simulated ? { notice: SIMULATED_NOTICE } : {}),
      planned: plan.runs.length,
      toRun: work.length,
      threads: plan.threads,
      concurrency: plan.concurrency,
      backend: this.#options.supervisor?.backend ?? 'threads',
    });
    if (work.length > 0 && !signal?.aborted) {
      const supervisor = new Supervisor({
        threads: plan.threads,
        isolation: plan.isolation,
        providers: { [plan.provider.name]: plan.provider.config },
        defaultProvider: plan.provider.name,
        ...(plan.defaultModel === undefined ? {} : { defaultModel: plan.defaultModel }),
        journalDir: this.#options.writer.paths.journals,
        cwd: plan.cwd,
        definitions: this.#options.definitions ?? [],
        toolModules: plan.toolModules,
        ...this.#options.supervisor,
      });
      this.#listen(supervisor);
      try {
        const fanOut = supervisor.fanOut(
          work.map((item) => this.#spec(item)),
          { concurrency: plan.concurrency, ...(signal ? { signal } : {}) },
        );
        await fanOut.all();
      } finally {
        // Cancels agents spawned by agents that outlived their parents, then stops the threads.
        await supervisor.close();
      }
    }
    const interrupted = signal?.aborted ?? false;
    const summary = this.writeSummary(interrupted);
    this.#finished = true;
    emit({ type: 'summary', runDir: this.#options.writer.paths.root, summary });
    return { summary, interrupted };
  }

  /**
   * Writes `summary.json` from the results so far (synchronously: the second Ctrl-C calls it just
   * before the process exits).
   */
  writeSummary(interrupted: boolean): RunSummary {
    const session: RunSession = {
      kind: this.#options.kind,
      startedAt: this.#startedAt.toISOString(),
      endedAt: new Date().toISOString(),
      interrupted,
    };
    const summary = summarize(this.#options.plan, this.#lines, [
      ...(this.#options.previousSessions ?? []),
      session,
    ]);
    if (!this.#finished) this.#options.writer.writeSummary(summary);
    return summary;
  }

  #spec(item: WorkItem): SpawnSpec {
    const { plan } = this.#options;
    const { run } = item;
    // `resume` is passed through to Supervisor.spawn, which continues the agent from its journal.
    const spec: SpawnSpec & { readonly resume?: boolean } = {
      agent: run.agent,
      task: run.task,
      context: run.context,
      metadata: run.metadata,
      id: item.agentId,
      provider: plan.provider.name,
      ...(plan.model === undefined ? {} : { model: plan.model }),
      ...(plan.limits === undefined ? {} : { limits: plan.limits }),
      ...(item.resume ? { resume: true } : {}),
    };
    return spec;
  }

  #listen(supervisor: Supervisor): void {
    const emit = this.#options.onEvent ?? (() => {});
    const ref = (agentId: string) => {
      const tracked = this.#tracked.get(agentId);
      return { agentId, index: tracked?.index ?? null, agent: tracked?.agent ?? 'unknown' };
    };
    supervisor.on('agent:spawned', (event) => {
      if (!this.#tracked.has(event.agentId)) {
        this.#tracked.set(event.agentId, {
          index: null,
          agent: event.agent,
          parentId: event.parentId,
          attempt: 1,
          label: undefined,
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
    supervisor.on('agent:usage', (event) =>
      emit({
        type: 'usage',
        ...ref(event.agentId),
        inputTokens: event.inputTokens,
        outputTokens: event.outputTokens,
        costUsd: event.costUsd,
      }),
    );
    supervisor.on('agent:text', (event) => emit({ type: 'text', ...ref(event.agentId), text: event.text }));
    supervisor.on('agent:waiting', (event) => emit({ type: 'waiting', ...ref(event.agentId) }));
    supervisor.on('agent:instructed', (event) =>
      emit({ type: 'instructed', ...ref(event.agentId), text: event.text }),
    );
    supervisor.on('agent:restarted', (event) => {
      const tracked = this.#tracked.get(event.agentId);
      if (tracked) tracked.restarts = event.restart;
      emit({ type: 'restarted', ...ref(event.agentId), restart: event.restart, cause: event.cause });
    });
    const ended = (event: { agentId: string; outcome: AgentOutcome }) => this.#record(event.outcome);
    supervisor.on('agent:completed', ended);
    supervisor.on('agent:failed', ended);
    supervisor.on('thread:started', (event) =>
      emit({ type: 'thread', event: 'started', hostId: event.hostId }),
    );
    supervisor.on('thread:crashed', (event) =>
      emit({ type: 'thread', event: 'crashed', hostId: event.hostId }),
    );
    supervisor.on('thread:respawned', (event) =>
      emit({ type: 'thread', event: 'respawned', hostId: event.hostId }),
    );
    supervisor.on('provider:backoff', (event) =>
      emit({ type: 'backoff', provider: event.provider, retryAfterMs: event.retryAfterMs }),
    );
  }

  #record(outcome: AgentOutcome): void {
    const tracked = this.#tracked.get(outcome.agentId);
    if (!tracked) return;
    const line = resultLine(outcome, {
      index: tracked.index,
      parentId: tracked.parentId,
      agent: tracked.agent,
      attempt: tracked.attempt,
      label: tracked.label,
      hostId: tracked.hostId,
      restarts: tracked.restarts,
      startedAt: tracked.startedAt,
      endedAt: new Date().toISOString(),
    });
    this.#options.writer.append(line);
    this.#lines.push(line);
    this.#options.onEvent?.({ type: 'ended', line });
  }
}
