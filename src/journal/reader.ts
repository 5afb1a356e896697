/**
 * Reads a JSONL journal. A torn last line (a crash cut the last append short) is detected and
 * ignored; any other bad line is reported as a problem, never thrown, so a damaged journal can
 * still be inspected, verified and (up to the damage) resumed.
 *
 * Torn means "after the last newline". Each event is appended as one write ending in its newline,
 * so a write cut short loses the end of the line, newline included. A newline-terminated line that
 * does not parse, even the last one, is damage, not a torn write: treating it as torn would let a
 * flipped byte in the last event (or in the newline before it) pass verification unnoticed.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { isTroupeError, SystemError, UserError } from '../errors.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { withHash } from './chain.ts';
import { MAX_JOURNAL_LINE_BYTES } from './constants.ts';
import { type AuditEvent, auditEventProblem } from './events.ts';

/** A line that is not a well-formed event (other than a torn last line). */
export interface JournalProblem {
  /** 1-based line number. */
  readonly line: number;
  /** Byte offset of the line's start. */
  readonly offset: number;
  /**
   * `non_canonical`: the line holds a well-formed event but not in the exact bytes the writer
   * stores (CRLF, a byte order mark, re-formatted JSON). Its hash may still match, since hashes
   * cover the parsed value; a verified journal is also byte-exact.
   */
  readonly reason: 'unparseable' | 'not_an_event' | 'blank_line' | 'non_canonical';
  readonly message: string;
}

/** What {@link readJournal} found. */
export interface JournalContents {
  /** The well-formed events, in file order (bad lines left out). */
  readonly events: AuditEvent[];
  /** The file did not end with a newline: the bytes after the last one are a torn append, not in `events`. */
  readonly tornTail: boolean;
  /** Length in bytes of the torn last line, newline included (0 when there is none). */
  readonly tornTailBytes: number;
  /** Newline-terminated lines that are not well-formed events: damage, not a torn write. */
  readonly problems: JournalProblem[];
  /**
   * With `{ hashes: true }`: the content hash (`eventHash`) of each of `events`, in the same order,
   * computed while checking that its line is canonical: `verifyJournal` takes them
   * (`contentHashes`) instead of serializing every event again.
   */
  readonly hashes?: string[];
}

/** Options of {@link readJournal} and {@link parseJournal}. */
export interface ReadJournalOptions {
  /** Also hash each event (for a chain check: `journalDamage`, `verifyJournalContents`). @default false */
  readonly hashes?: boolean;
}

/** Options of {@link readJournal}. */
export interface ReadJournalFileOptions extends ReadJournalOptions {
  /**
   * Bytes one line may hold (its newline not counted): a longer one fails with UserError
   * `journal_line_too_long`, read no further than the bound. @default MAX_JOURNAL_LINE_BYTES (64 MiB)
   */
  readonly maxLineBytes?: number;
  /** Read no more than this many lines (1: the `Started` event only). @default every line */
  readonly lines?: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** `ignoreBOM`: keep a byte order mark in the text, so that it is seen and reported. */
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
/** Bytes {@link readJournal} reads at a time. */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Reads and parses the journal at `path`, a chunk at a time: the file is never held whole, only
 * the line being parsed, and a line over `maxLineBytes` fails the read before it is held (a 2 GB
 * journal was read into one buffer, a 200 MB line into one string). Throws `SystemError` when the
 * file cannot be read (`journal_not_found`, `journal_io`) and UserError `journal_line_too_long`
 * (`path`, `line`, `offset`, `limit`); damage inside it is reported in the result.
 */
export function readJournal(path: string, options: ReadJournalFileOptions = {}): JournalContents {
  const maxLineBytes = options.maxLineBytes ?? MAX_JOURNAL_LINE_BYTES;
  const maxLines = options.lines ?? Number.POSITIVE_INFINITY;
  const contents = emptyContents(options);
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const chunk = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    let carry: Buffer[] = [];
    let carried = 0;
    let position = 0;
    let lineStart = 0;
    let line = 0;
    for (;;) {
      const read = readSync(fd, chunk, 0, READ_CHUNK_BYTES, position);
      if (read === 0) break;
      position += read;
      let start = 0;
      for (;;) {
        const newline = chunk.indexOf(NEWLINE, start);
        if (newline < 0 || newline >= read) break;
        line += 1;
        if (carried + newline - start > maxLineBytes) throw lineTooLong(path, line, lineStart, maxLineBytes);
        const piece = chunk.subarray(start, newline);
        addLine(contents, line, lineStart, carry.length === 0 ? piece : Buffer.concat([...carry, piece]));
        lineStart += carried + piece.length + 1;
        carry = [];
        carried = 0;
        start = newline + 1;
        if (line >= maxLines) return finish(contents, 0);
      }
      if (start < read) {
        carried += read - start;
        if (carried > maxLineBytes) throw lineTooLong(path, line + 1, lineStart, maxLineBytes);
        carry.push(Buffer.from(chunk.subarray(start, read)));
      }
    }
    return finish(contents, carried);
  } catch (error) {
    if (isTroupeError(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new SystemError('journal_not_found', `Expected a journal file at ${path}, found none`, { path });
    }
    const message = `Could not read journal ${path}: ${String(error)}`;
    throw new SystemError('journal_io', message, { path, errno: code }, { cause: error });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function lineTooLong(path: string, line: number, offset: number, limit: number): UserError {
  return new UserError(
    'journal_line_too_long',
    `Expected the lines of journal ${path} to hold at most ${limit} bytes each, but line ${line} (at byte ${offset}) is longer; it was not read`,
    { path, line, offset, limit },
  );
}

interface Contents {
  readonly events: AuditEvent[];
  readonly hashes: string[] | undefined;
  readonly problems: JournalProblem[];
}

function emptyContents(options: ReadJournalOptions): Contents {
  return { events: [], hashes: options.hashes === true ? [] : undefined, problems: [] };
}

/** Adds newline-terminated line `line` (1-based, at byte `offset`, without its newline). */
function addLine(contents: Contents, line: number, offset: number, bytes: Uint8Array): void {
  const parsed = parseLine(bytes, contents.hashes !== undefined);
  if ('event' in parsed) {
    contents.events.push(parsed.event);
    contents.hashes?.push(parsed.hash);
  } else {
    contents.problems.push({ line, offset, reason: parsed.reason, message: parsed.message });
  }
}

function finish({ events, hashes, problems }: Contents, tornTailBytes: number): JournalContents {
  return { events, tornTail: tornTailBytes > 0, tornTailBytes, problems, ...(hashes ? { hashes } : {}) };
}

/** Parses journal bytes (or text) the way {@link readJournal} does. */
export function parseJournal(data: Uint8Array | string, options: ReadJournalOptions = {}): JournalContents {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const contents = emptyContents(options);
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    line += 1;
    const newline = bytes.indexOf(NEWLINE, start);
    if (newline === -1) return finish(contents, bytes.length - start);
    addLine(contents, line, start, bytes.subarray(start, newline));
    start = newline + 1;
  }
  return finish(contents, 0);
}

/** Bytes read at a time by {@link readFirstEvent}: most `Started` lines fit in one read. */
const FIRST_LINE_CHUNK = 64 * 1024;

/**
 * The first event of the journal at `path`, reading no more than `maxBytes` of it, when `keep`
 * (given the line's text before it is parsed) accepts it. Undefined when the file cannot be read,
 * its first line is longer than `maxBytes`, torn, refused by `keep` or not a well-formed event:
 * nothing is thrown, so one bad file does not stop a search over many.
 */
export function readFirstEvent(
  path: string,
  maxBytes: number,
  keep: (line: string) => boolean = () => true,
): AuditEvent | undefined {
  const first = readFirstEventOrTooLong(path, maxBytes, keep);
  return first === 'too_long' ? undefined : first;
}

/**
 * {@link readFirstEvent}, saying `too_long` when the first `maxBytes` of the file hold no newline
 * (its first line is longer, or torn past the bound), for a caller that treats that apart.
 */
export function readFirstEventOrTooLong(
  path: string,
  maxBytes: number,
  keep: (line: string) => boolean = () => true,
): AuditEvent | 'too_long' | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    while (size < maxBytes) {
      const chunk = Buffer.allocUnsafe(Math.min(FIRST_LINE_CHUNK, maxBytes - size));
      const read = readSync(fd, chunk, 0, chunk.length, size);
      if (read === 0) return undefined;
      const newline = chunk.subarray(0, read).indexOf(NEWLINE);
      if (newline !== -1) {
        chunks.push(chunk.subarray(0, newline));
        const line = Buffer.concat(chunks);
        if (!keep(decoder.decode(line))) return undefined;
        const parsed = parseLine(line, false);
        return 'event' in parsed ? parsed.event : undefined;
      }
      chunks.push(chunk.subarray(0, read));
      size += read;
    }
    return 'too_long';
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

type LineResult =
  | { readonly event: AuditEvent; readonly hash: string }
  | { readonly reason: JournalProblem['reason']; readonly message: string };

function parseLine(bytes: Uint8Array, hashed: boolean): LineResult {
  if (bytes.length === 0) return { reason: 'blank_line', message: 'Expected an event, found an empty line' };
  const text = decoder.decode(bytes);
  let value: unknown;
  try {
    // JSON.parse would skip a trailing CR as whitespace; the canonical check below reports it.
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    return {
      reason: 'unparseable',
      message: `Expected a JSON event, found invalid JSON (${(error as Error).message})`,
    };
  }
  const problem = auditEventProblem(value);
  if (problem !== undefined)
    return { reason: 'not_an_event', message: `Expected an audit event: ${problem}` };
  const event = value as AuditEvent;
  const checked = canonicalCheck(text, bytes, event, hashed);
  if ('reason' in checked) return { reason: 'non_canonical', message: checked.reason };
  return { event, hash: checked.hash };
}

/**
 * Why `text` is not the exact line the writer stores for `event`; else, when `hashed`, the event's
 * content hash (`eventHash`): the canonical JSON the check builds is what the hash covers, so
 * hashing it here spares a chain check a second serialization of every event.
 */
function canonicalCheck(
  text: string,
  bytes: Uint8Array,
  event: AuditEvent,
  hashed: boolean,
): { readonly hash: string } | { readonly reason: string } {
  if (bytes[bytes.length - 1] === CARRIAGE_RETURN) {
    return {
      reason:
        'Expected a line ending in LF only, found a carriage return before it (CRLF line endings: the file was converted)',
    };
  }
  if (text.charCodeAt(0) === 0xfeff) {
    return {
      reason:
        'Expected the line to start with `{`, found a byte order mark (U+FEFF: the file was re-saved as "UTF-8 with BOM")',
    };
  }
  try {
    const { hash, ...rest } = event;
    const canonical = canonicalJson(rest);
    // Writers before 2026-11-30 sorted `hash` among the other members: their lines are canonical too.
    if (withHash(canonical, hash) === text || canonicalJson(event) === text) {
      return { hash: hashed ? sha256Hex(canonical) : '' };
    }
  } catch {
    return { reason: 'Expected an event that serializes to canonical JSON, found one that does not' };
  }
  return {
    reason:
      'Expected the canonical JSON of its event (sorted members, no whitespace, `hash` last), found other bytes for the same value',
  };
}
