/**
 * Resolving a spawn before it runs, the same for every engine: the named definition, the provider,
 * and the model (see spawnModel: aliases, `inherit`, the supervisor's default).
 */
import type { AgentDefinition } from '../definition/types.ts';
import { type SerializedError, UserError } from '../errors.ts';
import type { PreparedSupervisorOptions } from './options.ts';
import { type RecordSpec, spawnModel } from './record-spec.ts';

/** What resolution reads of the supervisor. */
export interface SpawnDefaults {
  readonly definitions: ReadonlyMap<string, AgentDefinition>;
  readonly options: Pick<PreparedSupervisorOptions, 'providers' | 'defaultModel' | 'modelMap'>;
  /** The resolved model of a known agent (a spawn's parent, for `inherit`). */
  readonly modelOf: (agentId: string) => string | undefined;
}

/**
 * Fills `spec` in place (`definition` from `name` when the spawn named one; `model`). Returns the
 * `unknown_agent` / `unknown_provider` error of a spawn that cannot run, else undefined.
 */
export function resolveSpawn(
  spec: RecordSpec,
  name: string | undefined,
  defaults: SpawnDefaults,
): SerializedError | undefined {
  if (name !== undefined) {
    const definition = defaults.definitions.get(name);
    if (!definition) {
      const known = [...defaults.definitions.keys()].sort().join(', ');
      const message = `No agent definition named \`${name}\`. Known: ${known}`;
      return new UserError('unknown_agent', message, { agent: name }).toJSON();
    }
    spec.definition = definition;
  }
  if (!(spec.provider in defaults.options.providers)) {
    const message = `No provider named \`${spec.provider}\``;
    return new UserError('unknown_provider', message, { provider: spec.provider }).toJSON();
  }
  spec.model = spawnModel(spec, defaults.options, defaults.modelOf);
  return undefined;
}
