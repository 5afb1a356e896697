/**
 * Token counts of the text every request of a run repeats (the system prompt, the tool
 * declarations), remembered per counter. Agents of one definition share both texts, and counting
 * them with a BPE tokenizer at every agent's start was ~4-5 % of an actor host's time in a fan-out
 * profile (1,000 agents x 8 rounds).
 */
import type { TokenCounter } from '../projection/token-counter.ts';

/** Texts remembered per counter; the oldest is forgotten first. */
export const FIXED_TOKEN_CACHE_ENTRIES = 64;

const counts = new WeakMap<TokenCounter, Map<string, number>>();

/** `counter.count(text)`, from memory when this counter counted the same text before. */
export function countFixed(counter: TokenCounter, text: string): number {
  let known = counts.get(counter);
  if (!known) {
    known = new Map();
    counts.set(counter, known);
  }
  const count = known.get(text);
  if (count !== undefined) return count;
  const counted = counter.count(text);
  if (known.size >= FIXED_TOKEN_CACHE_ENTRIES) {
    const oldest = known.keys().next();
    if (!oldest.done) known.delete(oldest.value);
  }
  known.set(text, counted);
  return counted;
}
