/**
 * `grep`: search file contents with a regular expression the model wrote. A backtracking engine
 * (V8's) runs `^(a+)+$` on 35 characters for minutes, blocking the agent's thread and every agent on
 * it, so patterns run on re2js, a pure-JavaScript port of RE2 whose matching time is linear in the
 * input whatever the pattern. It reads JavaScript syntax, less what needs backtracking: lookaheads
 * and backreferences are refused with a message that says so (captureless lookbehinds are kept).
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type picomatchFunction from 'picomatch';
import type * as Re2js from 're2js';
import { UserError } from '../../errors.ts';
import { lazyPackage } from '../../require-package.ts';
import { confinePath } from '../confine.ts';
import {
  GREP_LINE_CHAR_LIMIT,
  GREP_MATCH_TIME_LIMIT_MS,
  GREP_MAX_FILE_BYTES,
  GREP_MAX_LINE_WORK,
  GREP_MAX_VISITED,
  GREP_RESULT_LIMIT,
} from '../constants.ts';
import type { Tool } from '../types.ts';
import { isBinary, splitLines } from './text.ts';
import { skipUnreadable, type Unreadable, unreadableNote, walkFiles } from './walk.ts';

// Loaded by the first grep (src/require-package.ts).
const picomatch = lazyPackage<typeof picomatchFunction>('picomatch');
const re2 = lazyPackage<typeof Re2js>('re2js');

type GrepArgs = {
  readonly pattern: string;
  readonly path?: string;
  readonly glob?: string;
  readonly case_insensitive?: boolean;
  readonly max_results?: number;
};

/** Searches files inside the working directory, line by line. */
export const grepTool: Tool<GrepArgs> = createGrepTool();

/** Bounds of {@link createGrepTool}; tests lower them. */
export interface GrepBounds {
  /** Files looked at. @default GREP_MAX_VISITED */
  readonly maxVisited?: number;
  /** Characters × pattern size matched on one line. @default GREP_MAX_LINE_WORK */
  readonly maxLineWork?: number;
  /** Matching time of one call. @default GREP_MATCH_TIME_LIMIT_MS */
  readonly matchTimeLimitMs?: number;
}

/**
 * The grep tool with its bounds (the built-in's are GREP_MAX_VISITED, GREP_MAX_LINE_WORK and
 * GREP_MATCH_TIME_LIMIT_MS; a number is `maxVisited`).
 */
export function createGrepTool(bounds: number | GrepBounds = {}): Tool<GrepArgs> {
  const {
    maxVisited = GREP_MAX_VISITED,
    maxLineWork = GREP_MAX_LINE_WORK,
    matchTimeLimitMs = GREP_MATCH_TIME_LIMIT_MS,
  } = typeof bounds === 'number' ? { maxVisited: bounds } : bounds;
  return {
    name: 'grep',
    description:
      'Search file contents in the working directory with a regular expression, line by line. ' +
      'JavaScript syntax without lookaheads or backreferences (matching runs in linear time). ' +
      'Prints `path:line: text` for each match. Skips node_modules, .git, binary files and ' +
      `symbolic links. Returns at most ${GREP_RESULT_LIMIT} matches.`,
    parameters: {
      type: 'object',
      properties: {
        pattern: {
          type: 'string',
          minLength: 1,
          description:
            'Regular expression (no slashes), JavaScript syntax without lookaheads or backreferences.',
        },
        path: {
          type: 'string',
          description: 'File or directory to search, relative to the working directory. Defaults to it.',
        },
        glob: {
          type: 'string',
          description:
            'Only search files matching this glob, e.g. `*.ts` (matched against the file name) or ' +
            '`src/**/*.ts` (matched against the path below the searched directory).',
        },
        case_insensitive: { type: 'boolean', description: 'Ignore case. Defaults to false.' },
        max_results: {
          type: 'integer',
          minimum: 1,
          maximum: GREP_RESULT_LIMIT,
          description: `Stop after this many matches. Defaults to ${GREP_RESULT_LIMIT}.`,
        },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    readOnly: true,
    async execute(args, ctx) {
      const regex = compileLinear(args.pattern, args.case_insensitive === true);
      const requested = args.path ?? '.';
      const target = await confinePath(ctx.cwd, requested);
      if (!target.exists) throw new UserError('not_found', `\`${requested}\` does not exist`);
      const limit = Math.min(args.max_results ?? GREP_RESULT_LIMIT, GREP_RESULT_LIMIT);
      // picomatch's `basename` option also applies to patterns with a slash and then never matches.
      const matchesGlob =
        args.glob === undefined
          ? () => true
          : picomatch()(args.glob, { dot: true, basename: !args.glob.includes('/') });

      const isDir = (await stat(target.absolute)).isDirectory();
      const unreadable: Unreadable = { paths: [], count: 0 };
      const files = isDir
        ? walkFiles(target.absolute, ctx.signal, ctx.guard, unreadable)
        : single(target.absolute);
      const results: string[] = [];
      let stopped = false;
      let visited = 0;
      let cut = false;
      // Lines longer than this cost more than one line may (see GREP_MAX_LINE_WORK).
      const longestLine = Math.floor(maxLineWork / regex.programSize());
      let longLines = 0;
      let matchingMs = 0;
      let outOfTime = false;
      for await (const file of files) {
        visited += 1;
        if (visited > maxVisited) {
          cut = true;
          break;
        }
        const below = isDir ? path.relative(target.absolute, file).split(path.sep).join('/') : '';
        if (isDir && !matchesGlob(below)) continue;
        let bytes: Buffer;
        try {
          const info = await stat(file);
          // Not a regular file (a FIFO named as `path`): reading it could block for good.
          if (!info.isFile() || info.size > GREP_MAX_FILE_BYTES) continue;
          bytes = await readFile(file, { signal: ctx.signal });
        } catch (error) {
          // A file named as `path` fails as it did; one found by the walk is skipped and noted.
          if (!isDir) throw error;
          skipUnreadable(error, file, unreadable);
          continue;
        }
        if (isBinary(bytes)) continue;
        const shown = path.relative(target.root, file).split(path.sep).join('/');
        const lines = splitLines(bytes.toString('utf8'));
        const from = performance.now();
        for (let i = 0; i < lines.length; i += 1) {
          const line = lines[i] ?? '';
          if (line.length > longestLine) {
            longLines += 1;
            continue;
          }
          if (matchingMs + (performance.now() - from) > matchTimeLimitMs) {
            outOfTime = true;
            break;
          }
          if (!regex.test(line)) continue;
          if (results.length === limit) {
            stopped = true;
            break;
          }
          const text =
            line.length > GREP_LINE_CHAR_LIMIT ? `${line.slice(0, GREP_LINE_CHAR_LIMIT)}...` : line;
          results.push(`${shown}:${i + 1}: ${text}`);
        }
        matchingMs += performance.now() - from;
        if (stopped || outOfTime) break;
      }
      const skipped = unreadableNote(unreadable, target.root);
      const notes = [
        ...(stopped
          ? [`[Stopped at ${limit} matches; narrow the pattern, path or glob to see the rest]`]
          : []),
        ...(cut
          ? [`[Stopped after looking at ${maxVisited} files; search a smaller directory or narrow the glob]`]
          : []),
        ...(outOfTime
          ? [
              `[Stopped after ${matchTimeLimitMs} ms of matching; this pattern is slow on these files: simplify it (counted repeats such as {1,1000} cost the most) or narrow the path or glob]`,
            ]
          : []),
        ...(longLines > 0
          ? [
              `[${longLines} line(s) longer than ${longestLine} characters were not searched: this pattern is too costly for lines that long (counted repeats such as {1,1000} cost the most); simplify it to search them]`,
            ]
          : []),
        ...(skipped ? [skipped] : []),
      ];
      if (results.length === 0) {
        const where = target.relative === '.' ? 'the working directory' : target.relative;
        return { ok: true, text: [`No matches for /${args.pattern}/ in ${where}.`, ...notes].join('\n') };
      }
      return { ok: true, text: [...results, ...notes].join('\n') };
    },
  };
}

/**
 * Compiles a JavaScript-syntax pattern for re2js. Throws `UserError` `invalid_pattern` for a pattern
 * JavaScript rejects too, and `unsupported_pattern` for one only a backtracking engine can run
 * (lookaheads, backreferences).
 */
export function compileLinear(
  pattern: string,
  caseInsensitive: boolean,
): { test(line: string): boolean; programSize(): number } {
  const { RE2JS } = re2();
  const flags = RE2JS.LOOKBEHINDS | (caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
  try {
    return RE2JS.compile(toRe2Syntax(pattern), flags);
  } catch (re2Error) {
    try {
      new RegExp(pattern);
    } catch (error) {
      throw new UserError('invalid_pattern', (error as Error).message, {
        pattern,
      });
    }
    throw new UserError(
      'unsupported_pattern',
      `grep matches in linear time and cannot run /${pattern}/ (${(re2Error as Error).message}); ` +
        'lookaheads and backreferences need a backtracking engine: rewrite the pattern without them',
      { pattern },
    );
  }
}

/** JavaScript's `\uXXXX` and `\u{X}` escapes as RE2's `\x{X}`; everything else as written. */
function toRe2Syntax(pattern: string): string {
  return pattern.replace(/\\(?:u\{([0-9A-Fa-f]+)\}|u([0-9A-Fa-f]{4})|([\s\S]))/g, (match, braced, four) => {
    const hex = (braced ?? four) as string | undefined;
    return hex === undefined ? match : `\\x{${hex}}`;
  });
}

async function* single(file: string): AsyncGenerator<string> {
  yield file;
}
