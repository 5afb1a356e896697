/** Context windows of model families, for the input budget when the caller gives none. */

/** Tokens kept for the model's answer when deriving the input budget from a context window. */
export const OUTPUT_TOKEN_ALLOWANCE = 16_384;
/** Context window assumed for models troupe does not know. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

const WINDOWS: readonly (readonly [RegExp, number])[] = [
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5/, 400_000],
  [/^(?:o1|o3|o4)/, 200_000],
  [/^gpt-4o|^chatgpt-4o/, 128_000],
  [/^claude|^sonnet$|^opus$|^haiku$/, 200_000],
  [/^gpt-4(?:$|-)/, 8_192],
  [/^gpt-3\.5/, 16_385],
];

/** The context window of `model` (a provider prefix such as `openai/` is ignored). */
export function contextWindowFor(model: string): number {
  const bare = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  for (const [pattern, window] of WINDOWS) if (pattern.test(bare)) return window;
  return DEFAULT_CONTEXT_WINDOW;
}

/** The input budget for a context window: what is left after the answer allowance. */
export function maxInputFor(contextWindow: number): number {
  return Math.max(1024, contextWindow - Math.min(OUTPUT_TOKEN_ALLOWANCE, Math.floor(contextWindow / 4)));
}
