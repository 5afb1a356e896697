/**
 * Token counters: one interface, three built-ins. `heuristic` needs nothing; `o200k` and `cl100k` are
 * gpt-tokenizer's BPE encodings, loaded on first use because each table costs ~300 ms and ~35 MB of
 * heap, which an actor host running only non-OpenAI agents should never pay.
 */
import { createRequire } from 'node:module';
import { describeValue, UserError } from '../errors.ts';
import { HEURISTIC_CHARS_PER_TOKEN } from './constants.ts';

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

interface EncodingModule {
  countTokens(text: string, options: { disallowedSpecial: ReadonlySet<string> }): number;
}

const requireModule = createRequire(import.meta.url);

/**
 * No special token is recognised: providers encode user text with special tokens disallowed-as-text,
 * so `<|endoftext|>` inside a tool result costs its plain-text tokens, and gpt-tokenizer's default
 * (throw on a special token) would crash the loop on such a result.
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * A gpt-tokenizer BPE encoding. Its pre-tokenizer splits text into pieces that are encoded
 * independently; the projection ledger relies on that (see safe-cuts.ts) to count a render exactly
 * from per-section counts.
 */
export class BpeCounter implements TokenCounter {
  readonly name: 'o200k' | 'cl100k';
  readonly #modulePath: string;
  #encoding: EncodingModule | undefined;

  constructor(name: 'o200k' | 'cl100k') {
    this.name = name;
    this.#modulePath = `gpt-tokenizer/encoding/${name}_base`;
  }

  count(text: string): number {
    if (text === '') return 0;
    this.#encoding ??= requireModule(this.#modulePath) as EncodingModule;
    return this.#encoding.countTokens(text, PLAIN_TEXT);
  }
}

/** ceil(code points / 4): for models without a public tokenizer; calibration corrects it. */
export const heuristicCounter: TokenCounter = new HeuristicCounter();
/** o200k_base: GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o-series, gpt-oss. */
export const o200kCounter: TokenCounter = new BpeCounter('o200k');
/** cl100k_base: GPT-4 and GPT-3.5. */
export const cl100kCounter: TokenCounter = new BpeCounter('cl100k');

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
