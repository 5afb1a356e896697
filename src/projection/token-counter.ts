/**
 * Token counters: one interface, three built-ins. `heuristic` needs nothing; `o200k` and `cl100k` are
 * gpt-tokenizer's BPE encodings, loaded on first use because each table costs ~300 ms and ~35 MB of
 * heap, which an actor host running only non-OpenAI agents should never pay.
 */
import { createRequire } from 'node:module';
import { describeValue, UserError } from '../errors.ts';
import { HEURISTIC_CHARS_PER_TOKEN, MAX_EXACT_PIECE } from './constants.ts';

/** Counts the tokens of a text for one model family. */
export interface TokenCounter {
  /** `heuristic`, `o200k`, `cl100k`, or a custom name. */
  readonly name: string;
  /** Tokens in `text`. Must be deterministic. */
  count(text: string): number;
}

/** Names of the built-in counters. */
export type CounterName = 'heuristic' | 'o200k' | 'cl100k';

/** Unicode code points in `text` (a surrogate pair is one code point, a lone surrogate too). */
export function countCodePoints(text: string): number {
  let pairs = 0;
  const last = text.length - 1;
  for (let i = 0; i < last; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
}

/** ceil(code points / 4). The projection ledger keeps code points, not tokens, for this counter. */
export class HeuristicCounter implements TokenCounter {
  readonly name = 'heuristic';

  count(text: string): number {
    return Math.ceil(countCodePoints(text) / HEURISTIC_CHARS_PER_TOKEN);
  }
}

/** The part of gpt-tokenizer's `BytePairEncodingCore` a counter uses. */
interface EncodingCore {
  countNative(text: string): number;
}

interface EncodingParams {
  readonly tokenSplitRegex: RegExp;
  readonly bytePairRankDecoder: readonly (string | readonly number[])[];
  readonly specialTokensEncoder: Map<string, number>;
}

const requireModule = createRequire(import.meta.url);

/**
 * gpt-tokenizer's split regex with every unbounded quantifier (`*`, `+`) capped at `bound` code
 * points. Where no run of a quantified class is longer than `bound`, it splits exactly like the
 * original (a greedy `{0,n}` tries the same lengths in the same order as `*` when at most n fit);
 * a longer run (`AAAA…`, 300 spaces, a base64 blob without digits) becomes pieces of at most about
 * 2 x `bound`, so the BPE merge, quadratic in a piece's length, costs O(bound) per character.
 */
export function boundSplitRegex(regex: RegExp, bound: number): RegExp {
  const source = regex.source.replace(
    /(\]|\\s|\\p\{\w+\})([*+])/g,
    (_match, atom: string, quantifier: string) => `${atom}{${quantifier === '*' ? 0 : 1},${bound}}`,
  );
  return new RegExp(source, regex.flags);
}

const ENCODING_PARAMS = {
  o200k: () =>
    (
      requireModule('gpt-tokenizer/encodingParams/o200k_base') as {
        O200KBase: (r: unknown) => EncodingParams;
      }
    ).O200KBase(requireModule('gpt-tokenizer/bpeRanks/o200k_base').default),
  cl100k: () =>
    (
      requireModule('gpt-tokenizer/encodingParams/cl100k_base') as {
        Cl100KBase: (r: unknown) => EncodingParams;
      }
    ).Cl100KBase(requireModule('gpt-tokenizer/bpeRanks/cl100k_base').default),
} as const;

/**
 * A gpt-tokenizer BPE encoding. Its pre-tokenizer splits text into pieces that are encoded
 * independently; the projection ledger relies on that (see safe-cuts.ts) to count a render exactly
 * from per-section counts.
 *
 * Counting takes time linear in the text, whatever it holds. The BPE merge of one piece is quadratic
 * in the piece's length (gpt-tokenizer, like tiktoken before 0.13), and a run of one character class
 * is one piece: 100,000 repeated `A`s took seconds and blocked the agent's thread. So pieces are cut
 * at {@link MAX_EXACT_PIECE} code points per character class before merging: the count is exactly
 * gpt-tokenizer's for every text without such a run (all prose and code we know of), and an
 * estimate within about two tokens per cut otherwise; {@link BpeCounter.isExact} tells which.
 * No special token is recognised: providers encode user text with special tokens as plain text, so
 * `<|endoftext|>` inside a tool result costs its plain-text tokens.
 */
export class BpeCounter implements TokenCounter {
  readonly name: 'o200k' | 'cl100k';
  /** Code points per character class in one piece before it is cut. */
  readonly maxExactPiece: number;
  #core: EncodingCore | undefined;
  #splits: { readonly exact: RegExp; readonly bounded: RegExp } | undefined;

  /**
   * @param name the encoding.
   * @param maxExactPiece code points of one character class a piece may hold before it is cut;
   *   tests lower it to exercise the cut.
   * @default maxExactPiece {@link MAX_EXACT_PIECE}
   */
  constructor(name: 'o200k' | 'cl100k', maxExactPiece: number = MAX_EXACT_PIECE) {
    if (!Number.isSafeInteger(maxExactPiece) || maxExactPiece < 1) {
      throw new UserError(
        'invalid_option',
        `Expected \`maxExactPiece\` to be a positive integer, got ${describeValue(maxExactPiece)}`,
        { option: 'maxExactPiece' },
      );
    }
    this.name = name;
    this.maxExactPiece = maxExactPiece;
  }

  count(text: string): number {
    if (text === '') return 0;
    return this.#load().countNative(text);
  }

  /**
   * Whether {@link count} is gpt-tokenizer's exact count for `text`: true unless the text has a
   * run longer than {@link maxExactPiece} of one character class. Costs two regex passes.
   */
  isExact(text: string): boolean {
    this.#load();
    const splits = this.#splits;
    if (splits === undefined || text.length <= this.maxExactPiece) return true;
    const exact = new RegExp(splits.exact);
    const bounded = new RegExp(splits.bounded);
    for (;;) {
      const a = exact.exec(text);
      const b = bounded.exec(text);
      if (a === null || b === null) return a === b;
      if (a.index !== b.index || a[0].length !== b[0].length) return false;
    }
  }

  #load(): EncodingCore {
    if (this.#core !== undefined) return this.#core;
    const params = ENCODING_PARAMS[this.name]();
    const bounded = boundSplitRegex(params.tokenSplitRegex, this.maxExactPiece);
    const { BytePairEncodingCore } = requireModule('gpt-tokenizer/BytePairEncodingCore') as {
      BytePairEncodingCore: new (config: EncodingParams) => EncodingCore;
    };
    this.#core = new BytePairEncodingCore({ ...params, tokenSplitRegex: bounded });
    this.#splits = { exact: params.tokenSplitRegex, bounded };
    return this.#core;
  }
}

/** ceil(code points / 4): for models without a public tokenizer; calibration corrects it. */
export const heuristicCounter: TokenCounter = new HeuristicCounter();
/** o200k_base: GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o-series, gpt-oss. */
export const o200kCounter: BpeCounter = new BpeCounter('o200k');
/** cl100k_base: GPT-4 and GPT-3.5. */
export const cl100kCounter: BpeCounter = new BpeCounter('cl100k');

const BY_NAME: Readonly<Record<CounterName, TokenCounter>> = {
  heuristic: heuristicCounter,
  o200k: o200kCounter,
  cl100k: cl100kCounter,
};

/** The built-in counter called `name`. Throws `UserError` `unknown_token_counter` otherwise. */
export function counterByName(name: string): TokenCounter {
  if (Object.hasOwn(BY_NAME, name)) return BY_NAME[name as CounterName];
  throw new UserError(
    'unknown_token_counter',
    `Expected a token counter name (heuristic, o200k, cl100k), got ${describeValue(name)}`,
    { counter: name },
  );
}

const O200K_FAMILY = /^(?:o\d|(?:chat)?gpt-(?:4o|4\.1|4\.5|5|oss|realtime|audio|image)|codex|computer-use)/;
const CL100K_FAMILY = /^gpt-(?:4|3\.5)(?:$|[-.])/;

/**
 * The counter for a model: o200k for GPT-4o/4.1/4.5/5, o-series and gpt-oss; cl100k for GPT-4 and
 * GPT-3.5; the heuristic for everything else (Claude, Gemini, open models). A provider prefix
 * (`openai/gpt-4o`) is ignored. `override` wins: a counter, or a built-in counter's name.
 */
export function counterForModel(model: string, override?: CounterName | TokenCounter): TokenCounter {
  if (override !== undefined) return typeof override === 'string' ? counterByName(override) : override;
  const bare = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  if (O200K_FAMILY.test(bare)) return o200kCounter;
  if (CL100K_FAMILY.test(bare)) return cl100kCounter;
  return heuristicCounter;
}
