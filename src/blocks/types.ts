/**
 * Blocks: versioned pieces of an agent kept apart from its definition, so many agents can share
 * them and a team can publish a new version without editing every definition. A **prompt block**
 * is an agent's instructions (a template with declared parameters); a **settings block** is a
 * mapping of values its prompt and tools read; a **model-settings block** is a set of
 * {@link ModelSettings}. Definitions refer to blocks by a dotted id and a semver range.
 */
import type { DefinitionProblem } from '../definition/problem-types.ts';
import type { ModelSettings } from '../providers/model-settings.ts';

/** What a block holds. */
export type BlockKind = 'prompt' | 'settings' | 'modelSettings';

/** A parameter a prompt block declares: its template reads it as a variable of that name. */
export interface PromptParameter {
  readonly description?: string;
  /** Used when the reference gives no value; a parameter without one must be given. */
  readonly default?: unknown;
}

interface BlockBase {
  /** Dotted id, e.g. `acme.intake`. */
  readonly id: string;
  /** Exact semver version, e.g. `1.2.0`. */
  readonly version: string;
  /** Where the block was read from: a file path, or `memory:<id>@<version>` for an app's own. */
  readonly source: string;
  /**
   * What reading it noticed and did not refuse, located in its file: an unknown key such as
   * `top_k` in a model-settings block, which is ignored. Not part of its hash.
   */
  readonly warnings?: readonly DefinitionProblem[];
}

/** A prompt block: an agent's instructions, rendered as a template with its parameters. */
export interface PromptBlock extends BlockBase {
  readonly kind: 'prompt';
  readonly description?: string;
  /** The template: the file's body after its frontmatter. */
  readonly text: string;
  /** 1-based line of `source` where `text` starts, for template error positions. */
  readonly textLine: number;
  readonly parameters: Readonly<Record<string, PromptParameter>>;
}

/** A settings block: values the agent's prompt (`settings.<id>.<key>`) and tools (`ctx.settings`) read. */
export interface SettingsBlock extends BlockBase {
  readonly kind: 'settings';
  readonly values: Readonly<Record<string, unknown>>;
}

/** A model-settings block: temperature, output limit, reasoning effort... */
export interface ModelSettingsBlock extends BlockBase {
  readonly kind: 'modelSettings';
  readonly settings: ModelSettings;
}

/** A block of any kind, as a {@link BlockStore} returns it: tell them apart by `kind`. */
export type Block = PromptBlock | SettingsBlock | ModelSettingsBlock;

/**
 * Where blocks come from. troupe ships a file-backed store (`fileBlockStore`: `.troupe/blocks/`
 * discovered from the working directory, then `~/.troupe/blocks/`) and programmatic ones
 * (`memoryBlockStore` over a list or Map, `functionBlockStore` over a lookup function).
 */
export interface BlockStore {
  /** Says where the store looks, for error messages (`.troupe/blocks in /repo, ~/.troupe/blocks`). */
  readonly description: string;
  /** The exact versions the store has of block `id` of `kind`; empty when it has none. */
  versions(kind: BlockKind, id: string): Promise<readonly string[]>;
  /**
   * One version of a block, or undefined when the store does not have it. Throws UserError
   * `invalid_block` (field `problems`: definition problems located in the block's file) when the
   * block exists but cannot be read.
   */
  read(kind: BlockKind, id: string, version: string): Promise<Block | undefined>;
}

/** A block as an app hands it to `memoryBlockStore` or returns it from a `functionBlockStore` lookup. */
export type BlockInput =
  | {
      readonly kind: 'prompt';
      readonly id: string;
      readonly version: string;
      /** The template, without frontmatter. */
      readonly text: string;
      /** Parameter names (each required), or name -> `{ description?, default? }`. @default {} */
      readonly parameters?: readonly string[] | Readonly<Record<string, PromptParameter>>;
      readonly description?: string;
    }
  | {
      readonly kind: 'settings';
      readonly id: string;
      readonly version: string;
      readonly values: Readonly<Record<string, unknown>>;
    }
  | {
      readonly kind: 'modelSettings';
      readonly id: string;
      readonly version: string;
      readonly settings: ModelSettings;
    };

/** A block reference as a definition writes it: a dotted id and a semver range. */
export interface BlockRef {
  readonly id: string;
  /** A semver range (`^1.2.0`, `~1.4`, `1.2.3`, `>=2 <3`). */
  readonly version: string;
}

/** A prompt block reference: `instructions: { prompt: acme.intake, version: ^1, parameters: {...} }`. */
export interface PromptRef extends BlockRef {
  /** Values of the block's parameters, by name. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** A block an agent runs with, as its Started event records it. */
export interface PinnedBlock {
  readonly kind: BlockKind;
  readonly id: string;
  /** The range the definition asked for. */
  readonly range: string;
  /** The version it resolved to: the highest the store had that satisfies the range. */
  readonly version: string;
  /** SHA-256 (hex) of the block's content (see `blockHash`). */
  readonly hash: string;
}

/** The blocks of one agent, resolved once when it starts. */
export interface ResolvedBlocks {
  readonly pinned: readonly PinnedBlock[];
  /** The prompt block: its template, where it is, and its parameter values (defaults filled in). */
  readonly prompt?: {
    readonly text: string;
    readonly source: string;
    readonly textLine: number;
    readonly parameters: Readonly<Record<string, unknown>>;
  };
  /** Values of each settings block, by block id. */
  readonly settings: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** The model-settings block's settings (the definition's own keys are applied over them later). */
  readonly modelSettings: ModelSettings;
  /** The warnings of the blocks read (see `Block.warnings`); the Started event records them. */
  readonly warnings?: readonly DefinitionProblem[];
}
