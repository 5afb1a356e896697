/**
 * Safe cuts: places where a text can be split without changing its BPE token count.
 *
 * gpt-tokenizer (like tiktoken) first splits text into pieces with a regex, then encodes each piece
 * on its own, so count(text) is the sum of the pieces' counts. Joining sections with "\n\n" is not
 * additive: the pieces at a seam can merge (".\n\n" is one o200k token, so is "\n\n\n"). But inside
 * a section there are positions where every piece boundary is forced, whatever comes before or
 * after. A *safe cut* at index i of X is one of:
 *
 *   1. X[i-1] is a letter or a digit, X[i] is a space or "\n", and X[i+1] is a letter;
 *   2. X[i-1] is a letter and X[i] a digit, or X[i-1] a digit and X[i] a letter.
 *
 * Claim: then count(X) = count(X[0..i]) + count(X[i..]), for o200k and cl100k alike.
 * Proof sketch, against both split regexes (gpt-tokenizer's encodingParams/constants.ts):
 *   - A piece that contains a letter or digit is a letter run (with at most one leading non-letter,
 *     non-digit, non-newline character and an optional contraction suffix `'s`, `'ll`...) or a run
 *     of one to three digits. Neither kind continues past a letter/digit into a space or newline, nor
 *     from letters into digits or back. So some piece ends exactly at i.
 *   - The regex has no lookbehind, so the pieces from i on depend only on X[i..].
 *   - Before i, only the end-of-input assertions (`\s+$`, `\s+(?!\S)`) could behave differently when
 *     X is cut at i, and both need a whitespace run reaching i; X[i-1] is not whitespace.
 * The rule reads only X[i-1..i+1], so a cut inside a section is still a cut of the whole render.
 * Conservative by design: letters outside the BMP and combining marks never make a cut.
 */

const OTHER = 0;
const LETTER = 1;
const DIGIT = 2;

const LETTER_RE = /\p{L}/u;
const DIGIT_RE = /\p{N}/u;

/** Letter, digit or other, for one UTF-16 code unit (a surrogate half is "other"). */
function classOf(unit: number): number {
  if (unit < 0x80) {
    if ((unit >= 0x61 && unit <= 0x7a) || (unit >= 0x41 && unit <= 0x5a)) return LETTER;
    return unit >= 0x30 && unit <= 0x39 ? DIGIT : OTHER;
  }
  if (unit >= 0xd800 && unit <= 0xdfff) return OTHER;
  const char = String.fromCharCode(unit);
  if (LETTER_RE.test(char)) return LETTER;
  return DIGIT_RE.test(char) ? DIGIT : OTHER;
}

/** True when `text` has a safe cut at index `i` (1 <= i < text.length). */
export function isSafeCut(text: string, i: number): boolean {
  if (i < 1 || i >= text.length) return false;
  const before = classOf(text.charCodeAt(i - 1));
  if (before === OTHER) return false;
  const at = text.charCodeAt(i);
  if (at === 0x20 || at === 0x0a) return i + 1 < text.length && classOf(text.charCodeAt(i + 1)) === LETTER;
  const atClass = classOf(at);
  return atClass !== OTHER && atClass !== before;
}

/** The first and last safe cut of a text (equal when it has one), or undefined when it has none. */
export interface CutRange {
  readonly first: number;
  readonly last: number;
}

/** Finds the first and last safe cut; O(distance from each end to its cut). */
export function findCutRange(text: string): CutRange | undefined {
  let first = -1;
  for (let i = 1; i < text.length; i++) {
    if (isSafeCut(text, i)) {
      first = i;
      break;
    }
  }
  if (first < 0) return undefined;
  let last = first;
  for (let i = text.length - 1; i > first; i--) {
    if (isSafeCut(text, i)) {
      last = i;
      break;
    }
  }
  return { first, last };
}
