/**
 * The buffer a stdio connection reads the server's messages with, in place of the SDK's: the SDK's
 * copies everything it holds on every chunk that arrives (`Buffer.concat` per chunk), so a message
 * of n bytes costs n²/(2 × chunk size) bytes of copying. A 60 MB tool result held an agent's
 * thread (and every other agent on it) busy for 90 s; this one joins the chunks of a message once.
 */

/** Turns one line (without its newline) into a message; throws when it is not one. */
export type LineParser<T> = (line: string) => T;

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
  /** Messages complete but not yet read (a line that did not parse is kept as its error). */
  #ready: (T | Unparsed)[] = [];

  constructor(maxBytes: number, parse: LineParser<T>) {
    this.#maxBytes = maxBytes;
    this.#parse = parse;
  }

  /** Takes a chunk; throws (and forgets what it held) when one message grows past the bound. */
  append(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      this.#hold(chunk.subarray(start, newline));
      const line = Buffer.concat(this.#chunks, this.#size).toString('utf8').replace(/\r$/, '');
      this.#chunks = [];
      this.#size = 0;
      try {
        this.#ready.push(this.#parse(line));
      } catch (error) {
        this.#ready.push(new Unparsed(error));
      }
      start = newline + 1;
    }
    if (start < chunk.length) this.#hold(chunk.subarray(start));
  }

  /** The next complete message, or null; throws the error of a line that was not a message. */
  readMessage(): T | null {
    const next = this.#ready.shift();
    if (next === undefined) return null;
    if (next instanceof Unparsed) throw next.error;
    return next;
  }

  /** Forgets everything held. */
  clear(): void {
    this.#chunks = [];
    this.#size = 0;
    this.#ready = [];
  }

  #hold(bytes: Buffer): void {
    if (this.#size + bytes.length > this.#maxBytes) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.#maxBytes} bytes`);
    }
    if (bytes.length === 0) return;
    this.#chunks.push(bytes);
    this.#size += bytes.length;
  }
}
