/** Limits of the built-in tools: what keeps one tool result from flooding the context. */

/** Cap on the text one `read_file` call returns; longer reads stop at a line and say where. */
export const READ_FILE_OUTPUT_BYTE_LIMIT = 100_000;
/** Files larger than this are not read at all (use `grep` or a shell command to look inside). */
export const READ_FILE_MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Entries `list_dir` shows before it stops. */
export const LIST_DIR_ENTRY_LIMIT = 1000;
/** Matches `grep` returns at most, whatever `max_results` asks for. */
export const GREP_RESULT_LIMIT = 200;
/** Characters of a matching line that `grep` shows. */
export const GREP_LINE_CHAR_LIMIT = 300;
/** Files larger than this are skipped by `grep`. */
export const GREP_MAX_FILE_BYTES = 2 * 1024 * 1024;
/** Directories `grep` never descends into. */
export const GREP_SKIPPED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);
/**
 * troupe's own run output (`.troupe/runs`, where `troupe run` journals and fan-out run directories
 * go by default): walks never enter it, or every `grep` would find its own call in the running
 * agent's journal and copies of files earlier runs read (files the agent's rules may now deny).
 */
export const WALK_SKIPPED_PATHS: readonly (readonly [parent: string, name: string])[] = [['.troupe', 'runs']];
/** Bytes inspected for a NUL byte to decide that a file is binary. */
export const BINARY_SNIFF_BYTES = 8000;
/** Paths `glob` returns at most. */
export const GLOB_RESULT_LIMIT = 500;
/** Files `glob` looks at before it stops (a pattern over a huge tree must end). */
export const GLOB_MAX_VISITED = 200_000;
/**
 * Files `grep` looks at before it stops, matched by its glob or not (210,000 empty files took 49 s
 * without a bound).
 */
export const GREP_MAX_VISITED = 200_000;
/**
 * Work `grep` spends on one line at most: its characters times the pattern's compiled size
 * (re2js's `programSize`). re2js is linear in the line but steps every live instruction per
 * character, about 20-60 ns each: `a{1,1000}$` (2,002 instructions) took 11.6 s on a
 * 100,000-character line, and a 2 MiB line would have held the agent's thread for minutes, past
 * its heartbeat, where no signal reaches it. Longer lines are skipped, and the result says so;
 * patterns of up to 25 instructions search any line of a file grep reads.
 */
export const GREP_MAX_LINE_WORK = 50_000_000;
/**
 * Matching time one `grep` call spends at most, summed over the lines it tried (reading files
 * does not count); then it stops with the matches found so far and says so.
 */
export const GREP_MATCH_TIME_LIMIT_MS = 10_000;
/**
 * Elements an HTML page may nest before `web_fetch` refuses to convert it: the HTML parser's work
 * grows with the square of the depth (100,000 nested `<div>`s, 500 KB, held an actor thread for
 * more than its 20 s heartbeat) and turndown recurses once per level (a stack overflow at a few
 * thousand). Real pages nest a few dozen deep.
 */
export const WEB_FETCH_MAX_HTML_DEPTH = 512;
/**
 * Characters of an element's inline `style` that `web_fetch` reads to tell whether the element is
 * hidden; an element with a longer `style` is treated as hidden (no real page writes 64 KB of
 * inline style, and padding one past what is read must not smuggle hidden text to the model).
 */
export const WEB_FETCH_MAX_STYLE_CHARS = 65_536;
/**
 * Largest `maxBytes` `createWebFetchTool` takes: 256 MiB. The body is decoded into one string, at
 * most one UTF-16 unit per byte, and V8's longest string is 2^29 - 24 units (about 512 MiB) on 64-bit:
 * a larger bound let a big enough body crash the agent's thread ("Invalid string length") instead
 * of being cut. Half of it leaves room for the copy the HTML conversion makes.
 */
export const WEB_FETCH_MAX_BYTES_LIMIT = 256 * 1024 * 1024;
/**
 * Largest `maxChars` `createWebFetchTool` takes: half of `MAX_TOOL_RESULT_CHARS` (4,000,000), so a
 * text cut at `maxChars` still fits a tool result with its header (URL, status, type) and notes; a
 * longer result would fail the call instead of being cut.
 */
export const WEB_FETCH_MAX_CHARS_LIMIT = 2_000_000;
/**
 * Largest `maxRedirects` `createWebFetchTool` takes: 20, the limit of the Fetch standard and of
 * browsers. A chain longer than that is a loop, and each hop is a DNS lookup and a connection.
 */
export const WEB_FETCH_MAX_REDIRECTS_LIMIT = 20;
