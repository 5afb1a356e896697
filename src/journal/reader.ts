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
import { readFileSync } from 'node:fs';
import { SystemError } from '../errors.ts';
import { type AuditEvent, auditEventProblem } from './events.ts';

/** A line that is not a well-formed event (other than a torn last line). */
export interface JournalProblem {
  /** 1-based line number. */
  readonly line: number;
  /** Byte offset of the line's start. */
  readonly offset: number;
  readonly reason: 'unparseable' | 'not_an_event' | 'blank_line';
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
}

const NEWLINE = 0x0a;
const decoder = new TextDecoder('utf-8');

/**
 * Reads and parses the journal at `path`. Throws `SystemError` only when the file cannot be read
 * (`journal_not_found`, `journal_io`); damage inside it is reported in the result.
 */
export function readJournal(path: string): JournalContents {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new SystemError('journal_not_found', `Expected a journal file at ${path}, found none`, { path });
    }
    const message = `Could not read journal ${path}: ${String(error)}`;
    throw new SystemError('journal_io', message, { path, errno: code }, { cause: error });
  }
  return parseJournal(bytes);
}

/** Parses journal bytes (or text) the way {@link readJournal} does. */
export function parseJournal(data: Uint8Array | string): JournalContents {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const events: AuditEvent[] = [];
  const problems: JournalProblem[] = [];
  let tornTailBytes = 0;
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    line += 1;
    const newline = bytes.indexOf(NEWLINE, start);
    if (newline === -1) {
      tornTailBytes = bytes.length - start;
      break;
    }
    const parsed = parseLine(bytes.subarray(start, newline));
    if ('event' in parsed) {
      events.push(parsed.event);
    } else {
      problems.push({ line, offset: start, reason: parsed.reason, message: parsed.message });
    }
    start = newline + 1;
  }
  return { events, tornTail: tornTailBytes > 0, tornTailBytes, problems };
}

type LineResult =
  | { readonly event: AuditEvent }
  | { readonly reason: JournalProblem['reason']; readonly message: string };

function parseLine(bytes: Uint8Array): LineResult {
  if (bytes.length === 0) return { reason: 'blank_line', message: 'Expected an event, found an empty line' };
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch (error) {
    return {
      reason: 'unparseable',
      message: `Expected a JSON event, found invalid JSON (${(error as Error).message})`,
    };
  }
  const problem = auditEventProblem(value);
  if (problem !== undefined)
    return { reason: 'not_an_event', message: `Expected an audit event: ${problem}` };
  return { event: value as AuditEvent };
}
