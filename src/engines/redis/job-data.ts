/**
 * The payload of an agent job (src/protocol/redis.ts `AgentJobData`): built by the engine from a
 * resolved actor spec, checked by the worker that takes the job.
 */
import { SystemError } from '../../errors.ts';
import type { ActorSpec, HostToolDeclaration, OptionalSignal } from '../../protocol/messages.ts';
import {
  type AgentJobData,
  BATCH_JOB_DATA_VERSION,
  type BatchJobData,
  JOB_DATA_VERSION,
  type RunBudgetLimits,
} from '../../protocol/redis.ts';
import type { EngineOptions } from '../engine.ts';
import type { PreparedRedisOptions } from './options.ts';

/**
 * Checks the shape of job data read from Redis. Throws SystemError `invalid_job` for data this
 * worker cannot run (another version, a foreign job in the queue).
 */
export function parseJobData(value: unknown, jobId: string | undefined): AgentJobData {
  const data = value as Partial<AgentJobData> | null;
  const problem =
    typeof data !== 'object' || data === null
      ? 'not an object'
      : data.version !== JOB_DATA_VERSION
        ? `version ${String(data.version)} (this worker runs version ${JOB_DATA_VERSION})`
        : typeof data.supervisorId !== 'string'
          ? 'no supervisorId'
          : typeof data.agent !== 'object' || data.agent === null || data.agent.agentId !== jobId
            ? 'no agent spec for this job id'
            : typeof data.provider !== 'object' || data.provider === null
              ? 'no provider'
              : typeof data.cwd !== 'string' || typeof data.parkAfterMs !== 'number'
                ? 'no cwd or parkAfterMs'
                : !Array.isArray(data.toolModules) || !Array.isArray(data.hostTools)
                  ? 'no toolModules or hostTools'
                  : data.runBudget !== undefined && !isRunBudget(data.runBudget)
                    ? 'a runBudget without numbers maxTotalTokens and maxCostUsd'
                    : undefined;
  if (problem !== undefined) {
    throw new SystemError(
      'invalid_job',
      `Expected troupe agent job data for job ${jobId}, found ${problem}`,
      {
        jobId,
      },
    );
  }
  return data as AgentJobData;
}

function isRunBudget(value: unknown): boolean {
  const budget = value as Partial<RunBudgetLimits> | null;
  return (
    typeof budget === 'object' &&
    budget !== null &&
    typeof budget.maxTotalTokens === 'number' &&
    typeof budget.maxCostUsd === 'number'
  );
}

/** What {@link jobData} needs besides the spec. */
export interface JobDataContext {
  readonly options: EngineOptions & { readonly redis: PreparedRedisOptions };
  readonly hostTools: readonly HostToolDeclaration[];
  readonly supervisorId: string;
  /** See `AgentJobData.wantedSignals`. */
  readonly wantedSignals: readonly OptionalSignal[];
  /** See `AgentJobData.secretsKey`. */
  readonly secretsKey?: string;
}

/**
 * The job data of `spec`. Throws SystemError `unknown_provider` when the spec names a provider the
 * options do not describe (the supervisor resolves providers before it runs an agent).
 */
export function jobData(spec: ActorSpec, ctx: JobDataContext): AgentJobData {
  const { options } = ctx;
  const provider = options.providers[spec.provider];
  if (!provider) {
    throw new SystemError('unknown_provider', `No provider named \`${spec.provider}\``, {
      provider: spec.provider,
    });
  }
  const { resume: _resume, ...agent } = spec;
  const runLimits = options.runLimits;
  const budgeted = runLimits !== undefined && (runLimits.maxTotalTokens > 0 || runLimits.maxCostUsd > 0);
  return {
    version: JOB_DATA_VERSION,
    supervisorId: ctx.supervisorId,
    agent,
    provider,
    limits: options.limits[spec.provider],
    toolModules: options.toolModules,
    hostTools: ctx.hostTools,
    cwd: options.cwd,
    parkAfterMs: options.redis.parkAfterMs,
    retainSeconds: options.redis.retainSeconds,
    wantedSignals: ctx.wantedSignals,
    ...(ctx.secretsKey === undefined ? {} : { secretsKey: ctx.secretsKey }),
    supervisorBeats: true,
    ...(budgeted
      ? { runBudget: { maxTotalTokens: runLimits.maxTotalTokens, maxCostUsd: runLimits.maxCostUsd } }
      : {}),
  };
}

/**
 * The batch job data of `specs` (at least one), whose job data {@link jobData} already built (the
 * provider checks are done). The fields every agent shares are taken from the first.
 */
export function batchJobData(agents: readonly AgentJobData[], retry: BatchJobData['retry']): BatchJobData {
  const first = agents[0];
  if (first === undefined) throw new SystemError('empty_batch', 'A batch job needs at least one agent');
  const { version: _version, agent: _agent, provider: _provider, limits: _limits, ...common } = first;
  const providers: Record<string, BatchJobData['providers'][string]> = {};
  for (const data of agents) {
    providers[data.agent.provider] ??= { provider: data.provider, limits: data.limits };
  }
  return {
    version: BATCH_JOB_DATA_VERSION,
    kind: 'batch',
    common,
    providers,
    agents: agents.map((data) => data.agent),
    retry,
  };
}

/** The job data of agent `index` of a batch, as a job of its own would carry it. */
export function batchAgentData(batch: BatchJobData, index: number): AgentJobData {
  const agent = batch.agents[index];
  const provider = agent === undefined ? undefined : batch.providers[agent.provider];
  if (agent === undefined || provider === undefined) {
    throw new SystemError('invalid_job', `The batch has no agent ${index} with a provider`, { index });
  }
  return {
    version: JOB_DATA_VERSION,
    ...batch.common,
    agent,
    provider: provider.provider,
    limits: provider.limits,
  };
}

/** Batch job data as read from Redis, with the job data of each of its agents. */
export interface ParsedBatch {
  readonly batch: BatchJobData;
  /** Agent `i`'s job data, as a job of its own would carry it ({@link batchAgentData}). */
  readonly agents: readonly AgentJobData[];
}

/**
 * Checks the shape of batch job data read from Redis, and each agent's job data as a job of its
 * own is checked. Throws SystemError `invalid_job` for data this worker cannot run.
 */
export function parseBatchJobData(value: unknown, jobId: string | undefined): ParsedBatch {
  const data = value as Partial<BatchJobData> | null;
  const problem =
    typeof data !== 'object' || data === null
      ? 'not an object'
      : data.version !== BATCH_JOB_DATA_VERSION
        ? `version ${String(data.version)} (this worker runs batch version ${BATCH_JOB_DATA_VERSION})`
        : data.kind !== 'batch' || !Array.isArray(data.agents) || data.agents.length === 0
          ? 'no agents'
          : typeof data.common !== 'object' ||
              data.common === null ||
              typeof data.common.supervisorId !== 'string'
            ? 'no supervisorId'
            : typeof data.providers !== 'object' || data.providers === null
              ? 'no providers'
              : typeof data.retry !== 'object' || data.retry === null
                ? 'no retry'
                : undefined;
  if (problem !== undefined) {
    throw new SystemError(
      'invalid_job',
      `Expected troupe batch job data for job ${jobId}, found ${problem}`,
      {
        jobId,
      },
    );
  }
  const batch = data as BatchJobData;
  // Each agent's data gets the checks a job of its own gets.
  const agents: AgentJobData[] = [];
  for (const [index, agent] of batch.agents.entries()) {
    agents.push(parseJobData(batchAgentData(batch, index), agent?.agentId));
  }
  return { batch, agents };
}
