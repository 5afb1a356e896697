/**
 * The buffer a stdio connection reads the server's messages with, in place of the SDK's: the SDK's
 * copies everything it holds on every chunk that arrives (`Buffer.concat` per chunk), so a message
 * of n bytes costs n²/(2 × chunk size) bytes of copying. A 60 MB tool result held an agent's
 * thread (and every other agent on it) busy for 90 s; this one joins the chunks of a message once.
 *
 * A message longer than the bound is not held: past the bound its bytes are read past, up to its
 * newline, and only scanned (without being kept) for its top-level `id`. An answer (it has
 * `result` or `error`) becomes an error answer to that id at once, so the call fails saying why
 * while the rest streams in, and the connection goes on. A request of the server's (it has `method`
 * and `id`: sampling, elicitation) is answered with an error as soon as its id is read, so the
 * server does not wait for an answer; anything else (a notification, a line that is not JSON) is
 * dropped. The SDK's own buffer threw, and the SDK then closed the connection: one long answer
 * killed the server and every call in flight.
 *
 * A line read past is bounded too (`maxLineBytes`): one that never ends left every message after
 * it unread, and every call waiting out its time limit. Past that bound the framing is taken as
 * lost: the buffer stops and says so (`onFramingLost`), for the connection to be closed once the
 * messages read before that line (a refusal of an answer over the bound among them) are taken.
 */
import { stdioLineBound } from './constants.ts';

/**
 * Turns one line (without its newline) into a message; throws when it is not one. `bytes` is the
 * line's length in UTF-8 bytes, as read.
 */
export type LineParser<T> = (line: string, bytes: number) => T;

/**
 * The JSON-RPC error code of the answer put in place of one over the bound (JSON-RPC's "internal
 * error"); `data.troupe` tells it from a server's own.
 */
export const MESSAGE_TOO_LONG_CODE = -32603;

/** `data` of the answer put in place of one over the bound. */
export interface MessageTooLongData {
  readonly troupe: 'message_too_long';
  /** The bound, in bytes. */
  readonly limit: number;
}

/** Whether `data` (an McpError's) marks an answer troupe put in place of one over the bound. */
export function isMessageTooLong(data: unknown): data is MessageTooLongData {
  return (data as { troupe?: unknown } | undefined)?.troupe === 'message_too_long';
}

/** What a {@link LineReadBuffer} tells its connection besides the messages it reads. */
export interface LineReadBufferHooks {
  /**
   * Bytes one line may run to, read past, before the framing is taken as lost.
   * @default stdioLineBound(maxBytes): 8 × maxBytes, at least 64 MiB
   */
  readonly maxLineBytes?: number;
  /**
   * A request of the server's over the bound, once its id is read: to be answered with
   * {@link requestTooLongAnswer}, or the server waits for an answer that never comes.
   */
  readonly onRequestTooLong?: (id: string | number) => void;
  /**
   * A line over the bound that was neither an answer nor a request (a notification, a line that is
   * not JSON) was read past and dropped, `lineBytes` long: for the bound on what a server sends
   * unasked, which it would otherwise escape.
   */
  readonly onDropped?: (lineBytes: number) => void;
  /**
   * A line ran past `maxLineBytes` (`lineBytes` read of it): the buffer has stopped reading. The
   * messages complete before it (an answer refused as it streamed in, say) are still to be read.
   */
  readonly onFramingLost?: (lineBytes: number) => void;
}

/** The JSON-RPC error answer troupe sends to a request of the server's that is over the bound. */
export function requestTooLongAnswer(
  id: string | number,
  limit: number,
): {
  jsonrpc: '2.0';
  id: string | number;
  error: { code: number; message: string; data: MessageTooLongData };
} {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: MESSAGE_TOO_LONG_CODE,
      message: `the request is longer than ${limit} bytes, the most troupe reads from one message; it was not read`,
      data: { troupe: 'message_too_long', limit },
    },
  };
}

/** A line that was not a message: its error, thrown when the line's turn comes. */
class Unparsed {
  constructor(readonly error: unknown) {}
}

/** Splits a byte stream into newline-terminated messages, holding at most `maxBytes` of one. */
export class LineReadBuffer<T> {
  readonly #maxBytes: number;
  readonly #parse: LineParser<T>;
  /** Bytes of the message being read, in the order they came. */
  #chunks: Buffer[] = [];
  #size = 0;
  /** Set while the rest of a message over the bound is read past. */
  #skipping: TopLevelScan | undefined;
  /** Messages complete but not yet read (a line that did not parse is kept as its error). */
  #ready: (T | Unparsed)[] = [];
  #stopped = false;
  readonly #maxLineBytes: number;
  readonly #hooks: LineReadBufferHooks;
  /** Bytes of the line being read past, so far. */
  #lineBytes = 0;

  constructor(maxBytes: number, parse: LineParser<T>, hooks: LineReadBufferHooks = {}) {
    this.#maxBytes = maxBytes;
    this.#parse = parse;
    this.#hooks = hooks;
    this.#maxLineBytes = hooks.maxLineBytes ?? stdioLineBound(maxBytes);
  }

  /** Takes a chunk. A message over the bound is read past (see the module's comment). */
  append(chunk: Buffer): void {
    if (this.#stopped) return;
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, newline === -1 ? chunk.length : newline);
      if (this.#skipping) this.#skip(piece);
      else this.#hold(piece);
      if (this.#stopped || newline === -1) return;
      this.#endLine();
      start = newline + 1;
    }
  }

  /** The next complete message, or null; throws the error of a line that was not a message. */
  readMessage(): T | null {
    const next = this.#ready.shift();
    if (next === undefined) return null;
    if (next instanceof Unparsed) throw next.error;
    return next;
  }

  /**
   * Forgets everything held, messages read but not yet taken included, and reads nothing more:
   * for a connection being closed, whose server must not be heard after the reason it was closed.
   */
  stop(): void {
    this.#stopped = true;
    this.clear();
  }

  /** Forgets everything held. */
  clear(): void {
    this.#chunks = [];
    this.#size = 0;
    this.#lineBytes = 0;
    this.#skipping = undefined;
    this.#ready = [];
  }

  #hold(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.#size + bytes.length > this.#maxBytes) {
      const held = this.#chunks;
      this.#chunks = [];
      this.#size = 0;
      this.#skipping = new TopLevelScan();
      this.#lineBytes = 0;
      for (const part of held) this.#skip(part);
      this.#skip(bytes);
      return;
    }
    this.#chunks.push(bytes);
    this.#size += bytes.length;
  }

  #skip(bytes: Buffer): void {
    const scan = this.#skipping;
    if (!scan) return;
    const before = this.#lineBytes;
    this.#lineBytes += bytes.length;
    // The bytes within the line's bound are scanned first: an answer whose id is among them is
    // refused even when the bound is passed in the same chunk.
    if (!scan.decided) {
      scan.feed(bytes.subarray(0, Math.max(0, this.#maxLineBytes - before)));
      this.#decide(scan);
    }
    if (this.#lineBytes > this.#maxLineBytes) {
      const read = this.#lineBytes;
      // Messages complete before this line (the refusal of its answer among them) are still
      // read; nothing after it is.
      const ready = this.#ready;
      this.stop();
      this.#ready = ready;
      this.#hooks.onFramingLost?.(read);
    }
  }

  /** Refuses an answer, or has a request answered, once its id is known. */
  #decide(scan: TopLevelScan): void {
    if (scan.decided || scan.id === undefined) return;
    if (scan.isAnswer) this.#refuse(scan);
    else if (scan.hasMethod) {
      scan.decided = true;
      this.#hooks.onRequestTooLong?.(scan.id);
    }
  }

  #endLine(): void {
    const scan = this.#skipping;
    if (scan) {
      this.#skipping = undefined;
      scan.end();
      this.#decide(scan);
      if (!scan.decided && scan.id !== undefined) this.#refuse(scan);
      if (!scan.decided) this.#hooks.onDropped?.(this.#lineBytes);
      this.#lineBytes = 0;
      return;
    }
    const bytes = Buffer.concat(this.#chunks, this.#size);
    const end = bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    this.#chunks = [];
    this.#size = 0;
    this.#push(bytes.toString('utf8', 0, end), end);
  }

  /** Puts an error answer to the scanned message's id in its place. */
  #refuse(scan: TopLevelScan): void {
    scan.decided = true;
    const data: MessageTooLongData = { troupe: 'message_too_long', limit: this.#maxBytes };
    const error = {
      code: MESSAGE_TOO_LONG_CODE,
      message: `the answer is longer than ${this.#maxBytes} bytes, the most troupe reads from one message (maxMessageBytes); it was not read`,
      data,
    };
    const line = JSON.stringify({ jsonrpc: '2.0', id: scan.id, error });
    this.#push(line, Buffer.byteLength(line));
  }

  #push(line: string, bytes: number): void {
    try {
      this.#ready.push(this.#parse(line, bytes));
    } catch (error) {
      this.#ready.push(new Unparsed(error));
    }
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Bytes of a top-level key, or of the `id`'s value, looked at: longer ones are not what is sought. */
const MAX_CAPTURE_BYTES = 256;

/**
 * Reads a JSON object's bytes as they come, keeping only what says whose message it is: its
 * top-level `id` and whether it has `result`, `error` or `method`. Nothing else is held, and the
 * inside of a long string is skipped with `indexOf`.
 */
class TopLevelScan {
  /** The top-level `id`, a string or a number, once read. */
  id: string | number | undefined;
  hasMethod = false;
  #hasAnswer = false;
  /** Set once the message was refused or can no longer be. */
  decided = false;
  #depth = 0;
  #inString = false;
  #escape = false;
  #expectKey = false;
  /** The top-level key being read (its raw bytes), or the last one read. */
  #key: number[] | undefined;
  #keyTooLong = false;
  #lastKey = '';
  /** The raw bytes of the `id`'s value being read. */
  #idBytes: number[] | undefined;

  /** It has an `id` and a `result` or `error` and no `method`: an answer, to that id. */
  get isAnswer(): boolean {
    return this.id !== undefined && this.#hasAnswer && !this.hasMethod;
  }

  feed(bytes: Buffer): void {
    let index = 0;
    // The next quote and backslash at or after `index`: -1 when there is none, -2 before looking.
    // Each is looked for again only once passed, so a chunk is searched once for each.
    let quote = -2;
    let backslash = -2;
    while (index < bytes.length && !this.decided) {
      if (this.#inString && !this.#escape && this.#key === undefined && this.#idBytes === undefined) {
        // The inside of a string nobody looks at: jump to its next quote or backslash.
        if (quote !== -1 && quote < index) quote = bytes.indexOf(QUOTE, index);
        if (backslash !== -1 && backslash < index) backslash = bytes.indexOf(BACKSLASH, index);
        const next = quote === -1 ? backslash : backslash === -1 ? quote : Math.min(quote, backslash);
        if (next === -1) return;
        if (next === backslash) {
          // An escape (`\"`, `\\`, `\u0022`): the byte after it is not the string's end.
          if (next + 1 === bytes.length) {
            this.#escape = true;
            return;
          }
          index = next + 2;
          continue;
        }
        index = next;
      }
      this.#byte(bytes[index] ?? 0);
      index += 1;
      // A request of the server's is answered once its id is read; a notification has none.
      if (this.hasMethod && this.id !== undefined) return;
    }
  }

  /** The message's newline came. */
  end(): void {
    this.#endId();
  }

  #byte(byte: number): void {
    if (this.#inString) {
      if (this.#escape) this.#escape = false;
      else if (byte === BACKSLASH) this.#escape = true;
      else if (byte === QUOTE) {
        this.#inString = false;
        if (this.#key !== undefined) {
          this.#lastKey = this.#keyTooLong ? '' : Buffer.from(this.#key).toString('utf8');
          this.#key = undefined;
          this.#keyTooLong = false;
          if (this.#lastKey === 'method') this.hasMethod = true;
          if (this.#lastKey === 'result' || this.#lastKey === 'error') this.#hasAnswer = true;
          return;
        }
      }
      this.#capture(byte);
      return;
    }
    switch (byte) {
      case QUOTE:
        this.#inString = true;
        if (this.#depth === 1 && this.#expectKey) {
          this.#expectKey = false;
          this.#key = [];
          return;
        }
        break;
      case 0x7b: // {
      case 0x5b: // [
        this.#depth += 1;
        if (this.#depth === 1) this.#expectKey = byte === 0x7b;
        // An id that is an object or an array is not one.
        else this.#idBytes = undefined;
        return;
      case 0x7d: // }
      case 0x5d: // ]
        if (this.#depth === 1) this.#endId();
        this.#depth -= 1;
        return;
      case 0x3a: // :
        if (this.#depth === 1 && this.#lastKey === 'id') {
          this.#idBytes = [];
          return;
        }
        break;
      case 0x2c: // ,
        if (this.#depth === 1) {
          this.#endId();
          this.#expectKey = true;
          return;
        }
        break;
    }
    this.#capture(byte);
  }

  #capture(byte: number): void {
    const into = this.#key ?? this.#idBytes;
    if (into === undefined) return;
    if (into.length < MAX_CAPTURE_BYTES) into.push(byte);
    else if (into === this.#key) this.#keyTooLong = true;
    else this.#idBytes = undefined;
  }

  #endId(): void {
    const raw = this.#idBytes;
    this.#idBytes = undefined;
    this.#lastKey = '';
    if (raw === undefined) return;
    try {
      const id: unknown = JSON.parse(Buffer.from(raw).toString('utf8'));
      if (typeof id === 'string' || typeof id === 'number') this.id = id;
    } catch {
      // Not a JSON string or number: no id.
    }
  }
}
