/**
 * The payload of an agent job: everything a worker on any machine needs to run (or resume) the
 * agent. Closures cannot travel, so providers, tool modules and host tools are described, exactly
 * as the thread backend describes them to its hosts (src/protocol/messages.ts).
 */
import type { AgentDefinition } from '../definition/types.ts';
import { type SerializedError, SystemError, UserError } from '../errors.ts';
import type { McpServers } from '../mcp/config.ts';
import type { ActorSpec, HostToolDeclaration, ProviderConfig, ToolModuleRef } from '../protocol/messages.ts';
import type { ProviderLimits } from '../supervisor/admission.ts';
import { actorSpec, type RecordSpec, spawnModel } from '../supervisor/record-spec.ts';
import type { PreparedRedisSupervisorOptions } from './options.ts';

/** Version of the payload layout; a worker refuses a job of a version it does not know. */
export const JOB_DATA_VERSION = 1;

/** An agent job's data. */
export interface AgentJobData {
  readonly version: typeof JOB_DATA_VERSION;
  /** Where the worker sends signals and host-tool calls. */
  readonly supervisorId: string;
  readonly agent: Omit<ActorSpec, 'resume'>;
  /** The agent's provider. API keys are best left out: HTTP providers read them from the worker's environment. */
  readonly provider: ProviderConfig;
  /** Admission limits of the provider key (the provider name), shared by every worker. */
  readonly limits: ProviderLimits | undefined;
  /** Imported by the worker: paths must exist on the worker's machine. */
  readonly toolModules: readonly ToolModuleRef[];
  /** Tools that run on the supervisor, called over Redis. */
  readonly hostTools: readonly HostToolDeclaration[];
  /** The supervisor's working directory; a worker uses it when it exists there, else its own. */
  readonly cwd: string;
  /** MCP servers of the run (the supervisor's option and `.mcp.json`); started by the worker. */
  readonly mcpServers?: McpServers;
  /** See DEFAULT_PARK_AFTER_MS. */
  readonly parkAfterMs: number;
  /** Seconds the journal and inbox are kept after the agent ends; undefined = kept. */
  readonly retainSeconds: number | undefined;
}

/** The job's return value: the agent's outcome (see AgentOutcome). */
export type { AgentOutcome as AgentJobResult } from '../loop/types.ts';

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

/** What {@link prepareJobData} needs from the supervisor. */
export interface JobDataContext {
  readonly definitions: ReadonlyMap<string, AgentDefinition>;
  readonly options: PreparedRedisSupervisorOptions;
  readonly hostTools: readonly HostToolDeclaration[];
  readonly supervisorId: string;
  /** MCP servers every agent may use. */
  readonly mcpServers?: McpServers;
  /** The resolved model of a known agent (a spawn's parent, for `inherit`). */
  readonly modelOf?: (agentId: string) => string | undefined;
}

/**
 * Resolves a spawn the way the thread backend does (the named definition, the provider, the model:
 * the spawn's, else the definition's, else the default) and fills `spec` in place. Returns the
 * job data, or the `invalid_request` error of a spawn that cannot run.
 */
export function prepareJobData(
  spec: RecordSpec,
  name: string | undefined,
  ctx: JobDataContext,
): { readonly data: AgentJobData } | { readonly error: SerializedError } {
  const { options } = ctx;
  if (name !== undefined) {
    const definition = ctx.definitions.get(name);
    if (!definition) {
      const known = [...ctx.definitions.keys()].sort().join(', ');
      const message = `No agent definition named \`${name}\`. Known: ${known}`;
      return { error: new UserError('unknown_agent', message, { agent: name }).toJSON() };
    }
    spec.definition = definition;
  }
  actorSpec(spec); // throws when the definition is unresolved, before anything is sent
  const provider = options.providers[spec.provider];
  if (!provider) {
    const message = `No provider named \`${spec.provider}\``;
    return { error: new UserError('unknown_provider', message, { provider: spec.provider }).toJSON() };
  }
  spec.model = spawnModel(spec, options, (id) => ctx.modelOf?.(id));
  const { resume: _resume, ...agent } = actorSpec(spec);
  return {
    data: {
      version: JOB_DATA_VERSION,
      supervisorId: ctx.supervisorId,
      agent,
      provider,
      limits: options.limits[spec.provider],
      toolModules: options.toolModules,
      hostTools: ctx.hostTools,
      cwd: options.cwd,
      ...(ctx.mcpServers === undefined ? {} : { mcpServers: ctx.mcpServers }),
      parkAfterMs: options.parkAfterMs,
      retainSeconds: options.retainSeconds,
    },
  };
}
