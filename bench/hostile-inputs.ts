/**
 * Hostile-input benchmark: the CPU-heavy steps on an agent's path, timed on inputs built to make
 * them slow. The figure: the o200k count of 200,000 repeated characters (the BPE merge is quadratic
 * in a piece's length; pieces are cut at MAX_EXACT_PIECE code points, see token-counter.ts).
 * Details: the counters on other pathological and ordinary texts, redaction, canonical JSON,
 * SHA-256 and grep's linear-time regex engine on big inputs. Each time is the median of several
 * runs on fresh strings (the BPE merge cache would otherwise answer from memory).
 *
 * Run: node --import tsx bench/hostile-inputs.ts [--quick]
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { canonicalJson, sha256Hex } from '../src/journal/canonical-json.ts';
import { JOURNAL_MASKING, redactText } from '../src/journal/redact.ts';
import { cl100kCounter, o200kCounter } from '../src/projection/token-counter.ts';
import { compileLinear } from '../src/tools/builtin/grep.ts';
import { type BenchOptions, type BenchOutput, round } from './support/figures.ts';
import { median } from './support/stats.ts';
import { checked } from './support/targets.ts';

const FIGURE_CHARS = 200_000;

/** Median milliseconds of `run` over `repeat` calls, each on a fresh input from `make(i)`. */
function timeMs<T>(repeat: number, make: (i: number) => T, run: (input: T) => unknown): number {
  const samples: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const input = make(i);
    const start = performance.now();
    run(input);
    samples.push(performance.now() - start);
  }
  return round(median(samples), 2);
}

/** Distinct characters per repetition, so no two runs share a merge-cache entry. */
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const letter = (i: number): string => LETTERS[i % LETTERS.length] ?? 'A';

function seededWords(chars: number, seed: number): string {
  const words = ['the', 'agent', 'reads', 'a', 'file', 'and', 'writes', 'its', 'result', 'to', 'disk.'];
  let state = seed;
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    const word = words[state % words.length] ?? 'x';
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ').slice(0, chars);
}

export interface HostileInputsResult {
  readonly quick: boolean;
  /** o200k count of 200,000 repeated characters, ms (median). */
  readonly repeatedChars200kMs: number;
  readonly counts: Record<string, number>;
  readonly redactMs: Record<string, number>;
  readonly canonicalJsonMs: Record<string, number>;
  readonly sha256Ms10MB: number;
  readonly grepRe2Ms: Record<string, number>;
}

export function runHostileInputsBench({ quick }: BenchOptions): BenchOutput {
  const repeat = quick ? 3 : 7;
  // Load the tables outside the timings (~300 ms each, once per thread).
  o200kCounter.count('warm up');
  cl100kCounter.count('warm up');
  const o200k = (text: string) => o200kCounter.count(text);
  const cl100k = (text: string) => cl100kCounter.count(text);
  const n = FIGURE_CHARS;

  const repeatedChars200kMs = timeMs(repeat, (i) => letter(i).repeat(n), o200k);
  const counts: Record<string, number> = {
    o200kRepeatedLetter200k: repeatedChars200kMs,
    cl100kRepeatedLetter200k: timeMs(repeat, (i) => letter(i).repeat(n), cl100k),
    o200kSpaces200k: timeMs(repeat, (i) => `${' '.repeat(n - 1)}${letter(i)}`, o200k),
    o200kDashes200k: timeMs(repeat, (i) => `${'-'.repeat(n - 1)}${letter(i)}`, o200k),
    o200kNewlines200k: timeMs(repeat, (i) => `${'\n'.repeat(n - 1)}${letter(i)}`, o200k),
    o200kCjkRun200k: timeMs(repeat, (i) => `${'中'.repeat(n - 1)}${letter(i)}`, o200k),
    o200kBase64_200k: timeMs(repeat, () => randomBytes((n * 3) / 4).toString('base64'), o200k),
    o200kProse200k: timeMs(repeat, (i) => seededWords(n, i + 1), o200k),
  };
  const exactOnProse = o200kCounter.isExact(seededWords(n, 1));

  const pemBlock = `-----BEGIN RSA PRIVATE KEY-----\n${'TUlJRW93SUJBQUtDQVFFQTdicTA=\n'.repeat(20_000)}-----END RSA PRIVATE KEY-----`;
  const redactMs: Record<string, number> = {
    plain2MB: timeMs(repeat, (i) => `${letter(i)}${'x'.repeat(2_000_000)}`, redactText),
    keyLike2MB: timeMs(repeat, (i) => `${letter(i)}${'sk-'.repeat(700_000)}`, redactText),
    colonPairs1MB: timeMs(repeat, (i) => `${letter(i)}${'a:'.repeat(500_000)}`, redactText),
    quotedPasswords1MB: timeMs(repeat, (i) => `${letter(i)}${`"password": '`.repeat(80_000)}`, redactText),
    urlLike1MB: timeMs(repeat, (i) => `${letter(i)}${'a://:x@'.repeat(150_000)}`, redactText),
    pem600KB: timeMs(repeat, (i) => `${letter(i)}${pemBlock}`, redactText),
  };

  const wide = (i: number) => ({
    type: 'ToolResult',
    data: Array.from({ length: 200_000 }, (_, k) => k + i),
  });
  const deep = () => {
    let value: unknown = 1;
    for (let k = 0; k < 500; k++) value = { a: value, b: [k, 'x'] };
    return { type: 'ToolResult', data: value };
  };
  const canonicalJsonMs: Record<string, number> = {
    wideArray200k: timeMs(repeat, wide, (event) => canonicalJson(event, JOURNAL_MASKING)),
    nested500: timeMs(repeat, deep, (event) => canonicalJson(event, JOURNAL_MASKING)),
    text2MB: timeMs(
      repeat,
      (i) => ({ text: `${letter(i)}${'y'.repeat(2_000_000)}` }),
      (event) => canonicalJson(event, JOURNAL_MASKING),
    ),
  };
  const sha256Ms10MB = timeMs(repeat, (i) => `${letter(i)}${'z'.repeat(10_000_000)}`, sha256Hex);

  const evil = compileLinear('^(a+)+$', false);
  const grepRe2Ms: Record<string, number> = {
    nestedQuantifier35: timeMs(
      repeat,
      (i) => `${'a'.repeat(34 + (i % 2))}!`,
      (line) => evil.test(line),
    ),
    nestedQuantifier1MB: timeMs(
      repeat,
      (i) => `${'a'.repeat(1_000_000 + i)}!`,
      (line) => evil.test(line),
    ),
  };

  return {
    figures: {
      'tokens.repeatedChars200kMs': checked('tokens.repeatedChars200kMs', repeatedChars200kMs, 'ms', 2),
    },
    details: {
      quick,
      repeatedChars200kMs,
      counts,
      exactOnProse,
      redactMs,
      canonicalJsonMs,
      sha256Ms10MB,
      grepRe2Ms,
    } satisfies HostileInputsResult & { exactOnProse: boolean },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const output = runHostileInputsBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(output, null, 2));
}
