/** The supervisor's state of one agent, whichever engine runs it. */
import { abortReason } from '../abort.ts';
import type { AgentOutcome, InheritedSpend } from '../loop/types.ts';
import { ZERO_USAGE } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import { AgentHandle, type HandleControl } from './agent-handle.ts';
import type { RecordSpec } from './record-spec.ts';
import type { ReplaySource, ReplayState } from './replay.ts';
import type { ReportedSpend } from './unreported-spend.ts';
import type { UsageNode } from './usage-tree.ts';

/** An instruction sent before the engine had the agent, delivered once it has. */
export interface HeldInstruction {
  readonly text: string;
  /** Its index when it must have one (an idempotent re-delivery); else the next. */
  readonly index?: number;
  readonly resolve: (index: number) => void;
  readonly reject: (error: unknown) => void;
}

/** What the supervisor knows of any agent it holds, live or ended. */
export interface KnownAgent extends UsageNode {
  readonly id: string;
  readonly spec: { readonly parentId: string | undefined; readonly depth: number; readonly model: string };
  readonly handle: AgentHandle;
  /** Spawned with an id the caller chose (kept once evicted, so it cannot be spawned again). */
  readonly named: boolean;
  /**
   * Its descendants that have not ended. While any has not, it is kept whatever the retention
   * limit: their usage rolls up through it.
   */
  liveDescendants: number;
}

/**
 * What the supervisor keeps of an ended agent, until the retention limit evicts it
 * (`SupervisorOptions.retainEndedAgents`): enough for `handle()`, `treeUsage()`, its parent's
 * `await_agents` and the usage roll-up. Its spec, task, definition, instructions, replay state,
 * children and closures are dropped when it ends.
 */
export interface EndedRecord extends KnownAgent {
  readonly state: 'ended';
}

/** A pending or running agent (an object whose `state` became 'ended' is replaced by an {@link EndedRecord}). */
export interface AgentRecord extends KnownAgent {
  readonly spec: RecordSpec;
  readonly settle: (outcome: AgentOutcome) => void;
  readonly children: string[];
  /**
   * Shared by every agent of one root's tree (a subagent gets its parent's): how many subagents
   * `spawn_agent` has started in it, against `orchestration.maxSubagents`. Made by the first
   * spawn_agent of the tree (most agents never spawn one), so every subagent has it.
   */
  tree: SubagentCount | undefined;
  /**
   * pending: spawned, waiting for the supervisor to start and resolve it; running: its engine
   * holds it (queued, running, restarting or parked there); ended: settled (the supervisor then
   * holds an {@link EndedRecord} instead).
   */
  state: 'pending' | 'running' | 'ended';
  /** The accepted `complete_task` result, once there is one. */
  completion: { value: unknown } | undefined;
  cancelReason: string | undefined;
  cancelTimer: NodeJS.Timeout | undefined;
  treeUsage: Usage;
  treeCostUsd: number;
  /** Instructions sent while pending, in order. */
  readonly held: HeldInstruction[];
  /** The agent whose journal this one continues (SpawnOptions.retryOf). */
  readonly retryOf: string | undefined;
  /** A retry's: what its fork's receipts add up to, known once the fork is made (`AgentOutcome.inherited`). */
  inherited: InheritedSpend | undefined;
  /**
   * What its receipts that reached the supervisor add up to (receipts are sent only for a usage
   * sink or `runLimits`): at its end, what its outcome says it spent beyond them is counted
   * against `runLimits` and given to the usage sink (see unreported-spend.ts).
   */
  readonly reported: ReportedSpend;
  /** Where its recording comes from, when it replays one (loaded before it runs). */
  readonly replaySource: ReplaySource | undefined;
  /** Its loaded recording: what its subagents replay. */
  replay: ReplayState | undefined;
  readonly removeAbortListener: () => void;
}

/** The subagents started in one root agent's tree. */
export interface SubagentCount {
  subagents: number;
}

/** An agent the supervisor holds. */
export type KnownRecord = AgentRecord | EndedRecord;

/** What a new record is made of. */
export interface NewRecord {
  readonly spec: RecordSpec;
  readonly named: boolean;
  readonly retryOf: string | undefined;
  readonly replaySource?: ReplaySource | undefined;
  readonly agent: string;
  readonly signal: AbortSignal | undefined;
  /** Its parent's tree count; a root's is made by its first spawn_agent. */
  readonly tree?: SubagentCount | undefined;
  /** What the handle calls: it must not hold the record, which the handle outlives. */
  readonly control: HandleControl;
}

const noAbortListener = (): void => {};

/** The cancels waiting on each caller signal, behind one listener per signal. */
const followers = new WeakMap<
  AbortSignal,
  { readonly cancels: Set<() => void>; readonly listener: () => void }
>();

/**
 * Runs `cancel` when the caller's `signal` aborts; returns what stops that. One listener per
 * signal however many agents follow it (a caller passing one signal to every spawn, as fanOut
 * does, had one per running agent on it, and Node warned of a listener leak past ten), removed
 * when the last of them ends.
 */
function followCallerSignal(signal: AbortSignal, cancel: () => void): () => void {
  let entry = followers.get(signal);
  if (entry === undefined) {
    const cancels = new Set<() => void>();
    const listener = (): void => {
      followers.delete(signal);
      for (const run of [...cancels]) run();
      cancels.clear();
    };
    entry = { cancels, listener };
    followers.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { cancels, listener } = entry;
  cancels.add(cancel);
  return () => {
    if (!cancels.delete(cancel) || cancels.size > 0) return;
    signal.removeEventListener('abort', listener);
    if (followers.get(signal) === entry) followers.delete(signal);
  };
}

/** A pending record with its handle; `cancel` runs when `signal` aborts. */
export function createRecord({
  spec,
  named,
  retryOf,
  replaySource,
  agent,
  signal,
  control,
  tree,
}: NewRecord): AgentRecord {
  let settle: (outcome: AgentOutcome) => void = () => {};
  const result = new Promise<AgentOutcome>((resolve) => {
    settle = resolve;
  });
  const handle = new AgentHandle(spec.agentId, agent, spec.parentId, result, control);
  const removeAbortListener = signal
    ? followCallerSignal(signal, () => control.cancel(spec.agentId, abortReason(signal)))
    : noAbortListener;
  return {
    id: spec.agentId,
    spec,
    handle,
    named,
    liveDescendants: 0,
    settle,
    children: [],
    tree,
    state: 'pending',
    completion: undefined,
    cancelReason: undefined,
    cancelTimer: undefined,
    treeUsage: ZERO_USAGE,
    treeCostUsd: 0,
    held: [],
    retryOf,
    inherited: undefined,
    reported: { usage: ZERO_USAGE, costUsd: 0 },
    replaySource,
    replay: undefined,
    removeAbortListener,
  };
}

/** What is kept of `record` once it has ended (its tree usage as rolled up so far). */
export function endedRecord(record: AgentRecord): EndedRecord {
  const { spec } = record;
  return {
    state: 'ended',
    id: record.id,
    spec: { parentId: spec.parentId, depth: spec.depth, model: spec.model },
    handle: record.handle,
    named: record.named,
    liveDescendants: record.liveDescendants,
    treeUsage: record.treeUsage,
    treeCostUsd: record.treeCostUsd,
  };
}

/**
 * Whether an entry the supervisor holds is an ended agent's. Only through this guard: a record
 * whose state became 'ended' is replaced in the map by its {@link EndedRecord} in the same call.
 */
export function isEnded(record: KnownRecord): record is EndedRecord {
  return record.state === 'ended';
}

/** Read through a call: TypeScript keeps an earlier narrowing of `state` across calls that change it. */
export function hasEnded(record: AgentRecord): boolean {
  return record.state === 'ended';
}
