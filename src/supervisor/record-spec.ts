/**
 * An agent's spec as a supervisor holds it before it runs. Both backends (threads and redis) spawn by
 * name and resolve the definition later, when discovery has run: until then `definition` is unset.
 */
import type { AgentDefinition } from '../definition/types.ts';
import { SystemError } from '../errors.ts';
import type { ActorSpec, ActorTraceContext } from '../protocol/messages.ts';
import { resolveModel } from '../providers/models.ts';
import type { PreparedSupervisorOptions } from './options.ts';

/** {@link ActorSpec}, mutable, with `definition` unset until the spawn name is resolved. */
export type RecordSpec = {
  -readonly [K in Exclude<keyof ActorSpec, 'definition' | 'trace'>]: ActorSpec[K];
} & {
  definition: AgentDefinition | undefined;
};

/**
 * The spec an agent runs with (with `trace` when its span is recorded). Throws `SystemError('definition_unresolved')` when its definition
 * was never resolved: agents are queued only once it is, so that would be a supervisor bug.
 */
export function actorSpec(spec: RecordSpec, trace?: ActorTraceContext): ActorSpec {
  const { definition } = spec;
  if (definition === undefined) {
    throw new SystemError(
      'definition_unresolved',
      `Agent ${spec.agentId} was about to run before its definition was resolved`,
      { agentId: spec.agentId },
    );
  }
  return { ...spec, definition, ...(trace === undefined ? {} : { trace }) };
}

/**
 * The model id a spawn runs with (both engines): the spawn's own model, else the definition's,
 * with `inherit` taking the parent's resolved model and aliases resolved for the spawn's provider.
 * `spec.model` is `''` when the spawn named none.
 */
export function spawnModel(
  spec: RecordSpec,
  options: Pick<PreparedSupervisorOptions, 'providers' | 'defaultModel' | 'modelMap'>,
  modelOf: (agentId: string) => string | undefined,
): string {
  const kind = options.providers[spec.provider]?.kind ?? 'module';
  const parentModel = spec.parentId === undefined ? undefined : modelOf(spec.parentId);
  return resolveModel({
    kind,
    provider: spec.provider,
    ...(spec.model === '' ? {} : { requested: spec.model }),
    definitionModel: spec.definition?.model ?? 'default',
    ...(parentModel === undefined || parentModel === '' ? {} : { parentModel }),
    defaultModel: options.defaultModel,
    modelMap: options.modelMap,
  }).id;
}
