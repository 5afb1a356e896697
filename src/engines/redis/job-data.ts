/**
 * The payload of an agent job (src/protocol/redis.ts `AgentJobData`): built by the engine from a
 * resolved actor spec, checked by the worker that takes the job.
 */
import { SystemError } from '../../errors.ts';
import type { ActorSpec, HostToolDeclaration, OptionalSignal } from '../../protocol/messages.ts';
import { type AgentJobData, JOB_DATA_VERSION } from '../../protocol/redis.ts';
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

/** What {@link jobData} needs besides the spec. */
export interface JobDataContext {
  readonly options: EngineOptions & { readonly redis: PreparedRedisOptions };
  readonly hostTools: readonly HostToolDeclaration[];
  readonly supervisorId: string;
  /** See `AgentJobData.wantedSignals`. */
  readonly wantedSignals: readonly OptionalSignal[];
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
  };
}
