/**
 * Who an agent's journal says spawned it, read from the head of its first line without holding or
 * parsing the whole line: a `Started` line holds the definition, context, metadata and task, and
 * can be megabytes long, while a search for an agent's children (a resumed parent's adoption,
 * `troupe resume`'s orphans) needs only its ids. The line is canonical JSON (src/journal/
 * canonical-json.ts), its members sorted by key, so `agentId`, `parentId` and `spawnCallId` are all
 * known once a member after `spawnCallId` begins (`systemPrompt`, `task`, `toolSpecs`... are never
 * read).
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** The ids of a journal's first line, as far as {@link readStartedHead} read it. */
export interface StartedHead {
  readonly agentId: string;
  /** Absent for an agent the program spawned. */
  readonly parentId?: string;
  /** The parent's `spawn_agent` call (absent in journals before it was recorded). */
  readonly spawnCallId?: string;
}

/** What {@link readStartedHead} found: the head, `too_long` past its bound, or nothing usable. */
export type StartedHeadResult = StartedHead | 'too_long' | undefined;

/** The last top-level member read: every one after it is sorted after it. */
const LAST_MEMBER = 'spawnCallId';
const WANTED = new Set(['agentId', 'parentId', 'spawnCallId']);
/** An id is short: a longer string is no id and is not kept. */
const MAX_ID_BYTES = 4096;
const CHUNK = 64 * 1024;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Scans a journal's first line chunk by chunk, in constant memory, for the top-level string
 * members `agentId`, `parentId` and `spawnCallId`. Bytes of UTF-8 multi-byte characters never
 * equal an ASCII quote, backslash or bracket, so the scan works on bytes.
 */
export class StartedHeadScanner {
  #depth = 0;
  #inString = false;
  #escape = false;
  #expectKey = false;
  #key: string | undefined;
  #capture: number[] | undefined;
  #capturing: 'key' | 'value' | undefined;
  #overflow = false;
  #done = false;
  #bad = false;
  readonly #found: Record<string, string> = {};

  /** Reads `chunk`; true once the head is known (or the line is found not to be an object). */
  push(chunk: Uint8Array): boolean {
    for (let i = 0; i < chunk.length && !this.#done; i += 1) this.#byte(chunk[i] as number);
    return this.#done;
  }

  /** The head read so far; undefined when the line is no JSON object or names no agent. */
  result(): StartedHead | undefined {
    if (this.#bad) return undefined;
    const { agentId, parentId, spawnCallId } = this.#found;
    if (agentId === undefined) return undefined;
    return {
      agentId,
      ...(parentId === undefined ? {} : { parentId }),
      ...(spawnCallId === undefined ? {} : { spawnCallId }),
    };
  }

  #byte(b: number): void {
    if (this.#inString) {
      if (this.#capture !== undefined) {
        if (this.#capture.length < MAX_ID_BYTES) this.#capture.push(b);
        else this.#overflow = true;
      }
      if (this.#escape) this.#escape = false;
      else if (b === BACKSLASH) this.#escape = true;
      else if (b === QUOTE) this.#endString();
      return;
    }
    switch (b) {
      case QUOTE:
        this.#inString = true;
        if (this.#depth !== 1) return;
        if (this.#expectKey) this.#startCapture('key');
        else if (this.#key !== undefined && WANTED.has(this.#key)) this.#startCapture('value');
        return;
      case 0x7b: // {
      case 0x5b: // [
        if (this.#depth === 0 && b !== 0x7b) this.#fail();
        this.#depth += 1;
        if (this.#depth === 1) this.#expectKey = true;
        return;
      case 0x7d: // }
      case 0x5d: // ]
        this.#depth -= 1;
        if (this.#depth <= 0) this.#done = true;
        return;
      case 0x2c: // ,
        if (this.#depth === 1) {
          this.#expectKey = true;
          this.#key = undefined;
        }
        return;
      case 0x0a: // the line ends
        this.#done = true;
        return;
      default:
        if (this.#depth === 0 && b !== 0x20 && b !== 0xef && b !== 0xbb && b !== 0xbf) this.#fail();
    }
  }

  #startCapture(kind: 'key' | 'value'): void {
    this.#capturing = kind;
    this.#capture = [QUOTE];
    this.#overflow = false;
  }

  #endString(): void {
    this.#inString = false;
    const bytes = this.#capture;
    const kind = this.#capturing;
    this.#capture = undefined;
    this.#capturing = undefined;
    if (bytes === undefined || kind === undefined) return;
    let text: string | undefined;
    try {
      text = this.#overflow ? undefined : (JSON.parse(Buffer.from(bytes).toString('utf8')) as string);
    } catch {
      text = undefined;
    }
    if (kind === 'key') {
      this.#expectKey = false;
      this.#key = text;
      if (text !== undefined && text > LAST_MEMBER) this.#done = true;
    } else if (text !== undefined && this.#key !== undefined) {
      this.#found[this.#key] = text;
    }
  }

  #fail(): void {
    this.#bad = true;
    this.#done = true;
  }
}

/**
 * The head of the first line of the journal at `path`, reading at most `maxBytes` of it:
 * `too_long` when the bound came first, undefined when the file cannot be read or its first line
 * is no JSON object naming an agent. Never throws: one bad file does not stop a search over many.
 */
export function readStartedHead(path: string, maxBytes: number): StartedHeadResult {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const scanner = new StartedHeadScanner();
    const chunk = Buffer.allocUnsafe(CHUNK);
    let offset = 0;
    while (offset < maxBytes) {
      const read = readSync(fd, chunk, 0, Math.min(CHUNK, maxBytes - offset), offset);
      if (read === 0) return undefined; // a torn first line: nothing to go by
      offset += read;
      if (scanner.push(chunk.subarray(0, read))) return scanner.result();
    }
    return 'too_long';
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** {@link StartedHeadScanner} over a line already in memory (a Redis stream entry). */
export function startedHeadOf(line: string): StartedHead | undefined {
  const scanner = new StartedHeadScanner();
  scanner.push(Buffer.from(line, 'utf8'));
  return scanner.result();
}
