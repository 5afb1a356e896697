/**
 * What an agent runs with, fixed when it starts and recorded in its Started event: the definition
 * (its text, or its content when it was built in code), the blocks (each range resolved to one
 * version), the settings values and the model settings. A resumed or restarted agent takes all of
 * them from the journal: a definition file edited or a block published since changes nothing.
 */
import { fileBlockStore } from '../blocks/file-store.ts';
import { NO_BLOCKS, resolveAgentBlocks } from '../blocks/resolve.ts';
import type { BlockStore, ResolvedBlocks } from '../blocks/types.ts';
import { definitionContent, definitionHash } from '../definition/hash.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { SystemError, UserError } from '../errors.ts';
import type { EventOf, StartedDefinition } from '../journal/events.ts';
import { type ModelSettings, mergeModelSettings } from '../providers/model-settings.ts';
import type { Provider } from '../providers/types.ts';

const definitionHashes = new WeakMap<AgentDefinition, string>();

/** {@link definitionHash}, computed once per definition object (many agents share one). */
export function definitionHashOf(definition: AgentDefinition): string {
  let hash = definitionHashes.get(definition);
  if (hash === undefined) {
    hash = definitionHash(definition);
    definitionHashes.set(definition, hash);
  }
  return hash;
}

/**
 * The definition as the Started event records it: its text when the text reads as this definition
 * (its `textHash` is `hash`), else its content. A definition derived from a loaded one in code
 * (`{ ...loaded, name, tools }`) keeps the loaded one's text, which would read back as the file's
 * definition: a restarted or resumed agent would run the file's tools and prompt, not its own.
 */
export function startedDefinition(definition: AgentDefinition, hash: string): StartedDefinition {
  return {
    name: definition.name,
    hash,
    path: definition.path,
    source: definition.source,
    ...(definition.text !== undefined && definition.textHash === hash
      ? { text: definition.text }
      : { content: definitionContent(definition) }),
  };
}

/** The definition a resumed agent runs, and what the resume should say about it. */
export interface PinnedDefinition {
  readonly definition: AgentDefinition;
  /** Set when the definition the resume was given is not the recorded one (its hash and path). */
  readonly changed?: { readonly hash: string; readonly path?: string };
  readonly notices: readonly string[];
}

/**
 * The definition recorded in `started`, read back: the recorded text parsed the way it was parsed
 * then, or the recorded content; undefined for a journal written before troupe recorded
 * definitions. `fallback` supplies what the record lacks (its path, source, body line). Throws
 * SystemError `pinned_definition_invalid` when the recorded text no longer parses. The definition
 * parser (and its YAML parser) is imported here, when it is needed, not when a thread starts.
 */
export async function recordedDefinition(
  started: EventOf<'Started'>,
  fallback: Partial<Pick<AgentDefinition, 'path' | 'source' | 'bodyLine'>> = {},
): Promise<AgentDefinition | undefined> {
  const recorded = started.definition;
  const path = recorded.path ?? fallback.path ?? `journal:${started.agentId}`;
  const source = recorded.source ?? fallback.source;
  if (recorded.text !== undefined) {
    const { parseDefinition } = await import('../definition/load.ts');
    const parsed = parseDefinition(recorded.text, path, {
      ...(source === undefined ? {} : { source }),
      path,
    });
    if (parsed.definition) return parsed.definition;
    const first = parsed.errors[0];
    throw new SystemError(
      'pinned_definition_invalid',
      `The definition recorded when agent ${started.agentId} started no longer reads as a definition` +
        (first ? ` (${first.line}:${first.column}: ${first.message})` : '') +
        '; resume it with the troupe version that started it',
      { agentId: started.agentId, path, errors: parsed.errors },
    );
  }
  if (recorded.content === undefined) return undefined;
  return { ...recorded.content, source, path, bodyLine: fallback.bodyLine } as AgentDefinition;
}

/**
 * The definition a resumed agent runs: {@link recordedDefinition}, or `given` (the definition as
 * it is now) for a journal written before troupe recorded definitions. Throws as
 * `recordedDefinition` does.
 */
export async function pinnedDefinition(
  started: EventOf<'Started'>,
  given: AgentDefinition,
): Promise<PinnedDefinition> {
  const recorded = started.definition;
  const givenHash = definitionHashOf(given);
  const changed = givenHash === recorded.hash ? undefined : { hash: givenHash, path: given.path };
  const definition = await recordedDefinition(started, given);
  if (definition !== undefined) {
    const hash = recorded.text === undefined ? recorded.hash : definitionHash(definition);
    const notices =
      hash === recorded.hash
        ? []
        : [
            `The recorded definition text reads as another definition (hash ${hash.slice(0, 12)}, recorded ${recorded.hash.slice(0, 12)}): this troupe version reads it differently, or the agent was spawned with a copy changed in code (a journal written before troupe recorded those by content); it runs as read now`,
          ];
    return { definition, ...(changed ? { changed } : {}), notices };
  }
  return {
    definition: given,
    notices: changed
      ? [
          'The journal does not record the definition (it was written before troupe pinned definitions): the current definition runs, and it differs from the one the agent started with',
        ]
      : [],
  };
}

/** The blocks a resumed agent runs with: the settings values recorded in its Started event. */
export function recordedBlocks(started: EventOf<'Started'>): ResolvedBlocks {
  return {
    pinned: started.blocks ?? [],
    settings: started.settings ?? {},
    modelSettings: {},
  };
}

/** What an agent starting afresh resolves before its Started event. */
export interface StartSettings {
  readonly blocks: ResolvedBlocks;
  readonly modelSettings: ModelSettings;
  /** Settings the provider does not send (for the Started event's `notices`). */
  readonly dropped: readonly string[];
}

/** What {@link resolveStartSettings} needs of a provider: its name, and its settings check if it has one. */
export type SettingsProvider = Pick<Provider, 'name' | 'checkModelSettings'>;

/**
 * Resolves an agent's blocks (unless a supervisor already did) and its model settings, lowest
 * precedence first: `defaults` (the supervisor's), the definition's model-settings block, the
 * definition's own keys, then `overrides` (the plan's and the spawn's). Throws the UserError of
 * `resolveAgentBlocks` for a block that cannot be resolved, and `unsupported_setting` (fields
 * `provider`, `setting`, `issues`) when the provider cannot send a setting as asked.
 */
export async function resolveStartSettings(options: {
  readonly definition: AgentDefinition;
  readonly cwd: string;
  readonly provider: SettingsProvider;
  readonly model: string;
  readonly blocks?: BlockStore;
  readonly resolvedBlocks?: ResolvedBlocks;
  readonly defaults?: ModelSettings;
  readonly overrides?: ModelSettings;
}): Promise<StartSettings> {
  const { definition } = options;
  const blocks =
    options.resolvedBlocks ??
    (await resolveAgentBlocks(definition, options.blocks ?? fileBlockStore({ cwd: options.cwd })));
  const modelSettings = mergeModelSettings(
    options.defaults,
    blocks === NO_BLOCKS ? undefined : blocks.modelSettings,
    definition.modelSettings,
    options.overrides,
  );
  const issues = options.provider.checkModelSettings?.(modelSettings, options.model) ?? [];
  const unsupported = issues.filter((issue) => issue.kind === 'unsupported');
  if (unsupported.length > 0) {
    throw new UserError('unsupported_setting', unsupported.map((issue) => issue.message).join('\n'), {
      provider: options.provider.name,
      setting: unsupported[0]?.setting,
      issues: unsupported,
    });
  }
  // Pushed to one literal: filter().map() results changed elements kind once this was optimized,
  // which changed this object's map under startRun's optimized code (a deopt and a recompile).
  const dropped: string[] = [];
  for (const issue of issues) if (issue.kind === 'dropped') dropped.push(issue.message);
  return { blocks, modelSettings, dropped };
}
