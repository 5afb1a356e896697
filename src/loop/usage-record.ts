/**
 * The usage sink: one record per model request (step), with what produced it (the agent, its
 * definition and version, the model) and what it cost. `runAgent` and the Supervisor both build
 * records here, from a ProviderReceipt (in-process) or the receipt an engine reports.
 */
import { definitionHash } from '../definition/hash.ts';
import type { AgentDefinition } from '../definition/types.ts';
import type { Usage } from '../providers/types.ts';
import type { ReplayRef } from '../replay/types.ts';

/** A versioned block an agent runs with (a prompt or settings block: src/blocks/), as pinned when it started. */
export interface BlockVersion {
  readonly id: string;
  readonly version: string;
}

/** One model request's usage, as the usage sink receives it. */
export interface UsageRecord {
  readonly agentId: string;
  readonly parentId: string | undefined;
  /** The definition run: its name and content hash (as the Started event records it). */
  readonly definition: { readonly name: string; readonly hash: string };
  /** Versions of the blocks the agent runs with (its Started event's `blocks`); empty when none. */
  readonly blocks: readonly BlockVersion[];
  /** The provider: the Supervisor's name for it (`runAgent`: the provider's `name`). */
  readonly provider: string;
  readonly model: string;
  readonly round: number;
  /** The step (1-based model request of the agent). */
  readonly step: number | undefined;
  /** Token counts; `usage.estimated` when troupe counted what the server did not report. */
  readonly usage: Usage;
  /** Some counts were estimated by troupe: both sides, or the one `usage.estimatedSide` names. */
  readonly estimated: boolean;
  /** USD; null when the model's price is unknown. */
  readonly costUsd: number | null;
  /** The request failed (its usage is what was sent and streamed before it did). */
  readonly errorCode?: string;
  /**
   * Not one request: the part of the agent's spend whose records never reached the Supervisor,
   * given once when the agent ends. Its thread (or redis worker) died between writing requests'
   * receipts to the journal and reporting them; the agent's outcome, built from the journal,
   * holds them. `usage` and `costUsd` are those requests' sum (less what a retry inherited),
   * `round` the agent's last, `step` undefined, `latencyMs` 0 and `startedAt` = `endedAt` its end.
   * So an agent's records always add up to its outcome (less `inherited`). Absent on the records of
   * requests.
   */
  readonly unreported?: true;
  /** The replay tag: what the agent replays, or null outside replays. */
  readonly replay: ReplayRef | null;
  /** When the request started and ended (ISO 8601; the start is the end less its latency). */
  readonly startedAt: string;
  readonly endedAt: string;
  readonly latencyMs: number;
}

/** Receives usage records. It runs on the caller's side; what it throws or rejects with is ignored. */
export type UsageSink = (record: UsageRecord) => void | Promise<void>;

/** What a record says about the agent. */
export interface UsageIdentity {
  readonly agentId: string;
  readonly parentId: string | undefined;
  /** The definition's name and content hash ({@link cachedDefinitionHash}). */
  readonly definition: { readonly name: string; readonly hash: string };
  readonly provider: string;
  readonly model: string;
  readonly replay: ReplayRef | undefined;
  /** The blocks it runs with. @default [] */
  readonly blocks?: readonly BlockVersion[];
}

/** What a record says about the request. */
export interface UsageRequest {
  readonly round: number;
  readonly step: number | undefined;
  readonly usage: Usage;
  readonly costUsd: number | null;
  readonly latencyMs: number;
  /** Epoch ms when the request ended. */
  readonly endedAt: number;
  readonly errorCode?: string;
  /** The agent's unreported requests, summed at its end ({@link UsageRecord.unreported}). */
  readonly unreported?: true;
}

const hashes = new WeakMap<AgentDefinition, string>();

/** The definition's content hash, computed once per definition object. */
export function cachedDefinitionHash(definition: AgentDefinition): string {
  let hash = hashes.get(definition);
  if (hash === undefined) {
    hash = definitionHash(definition);
    hashes.set(definition, hash);
  }
  return hash;
}

/** The usage record of one request. */
export function usageRecord(identity: UsageIdentity, request: UsageRequest): UsageRecord {
  return {
    agentId: identity.agentId,
    parentId: identity.parentId,
    definition: identity.definition,
    blocks: blockRefs(identity.blocks),
    provider: identity.provider,
    model: identity.model,
    round: request.round,
    step: request.step,
    usage: request.usage,
    estimated: request.usage.estimated === true,
    costUsd: request.costUsd,
    ...(request.errorCode === undefined ? {} : { errorCode: request.errorCode }),
    ...(request.unreported === true ? { unreported: true } : {}),
    replay: identity.replay ?? null,
    startedAt: new Date(request.endedAt - request.latencyMs).toISOString(),
    endedAt: new Date(request.endedAt).toISOString(),
    latencyMs: request.latencyMs,
  };
}

/** Hands `record` to `sink`, ignoring what it throws: a sink must not stop an agent. */
export function deliverUsage(sink: UsageSink, record: UsageRecord): void {
  try {
    const pending = sink(record);
    if (pending && typeof pending.then === 'function') pending.then(undefined, () => {});
  } catch {
    // Ignored, as documented on UsageSink.
  }
}

/** The blocks' ids and versions, pushed: an optimized map() returns a holey array, see round.ts. */
function blockRefs(blocks: UsageIdentity['blocks']): BlockVersion[] {
  const refs: BlockVersion[] = [];
  for (const block of blocks ?? []) refs.push({ id: block.id, version: block.version });
  return refs;
}
