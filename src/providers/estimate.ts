/** The cheap token estimate used where no tokenizer is worth its cost. */

/** ceil(characters / 4): the usual rough English token count. */
export function estimateTokens(characters: number): number {
  return Math.ceil(characters / 4);
}
