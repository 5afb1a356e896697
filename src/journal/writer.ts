/**
 * The JSONL journal file: one canonical JSON event per line, appended with O_APPEND.
 *
 * Writes are synchronous (`fs.writeSync`, then `fs.fdatasyncSync` under the `always` policy), so
 * events reach the file in call order with no write in flight behind a returned call, and a crash
 * leaves at most one torn last line. By default each `append` writes its event. A batching writer
 * (`batch: true`, what actor hosts use) keeps the events of one event-loop turn in memory and
 * writes them with one system call at the first of: {@link JournalWriter.commit} (the loop calls
 * it before every side effect: a model request, a tool's start, a message to a supervisor or a
 * person), {@link JournalWriter.commitAll} (an actor host calls it before it reports anything to
 * the supervisor), the end of the turn, {@link JournalWriter.flush} or {@link JournalWriter.close}.
 * What a crash can then lose is only events whose effects had not begun: resume sees the journal
 * as it stood before them, which is what a crash a moment earlier would have left, and still
 * never runs a finished tool call twice (see docs/journal.md).
 *
 * One writer per journal at a time: nothing locks the file.
 */
import {
  closeSync,
  fdatasyncSync,
  constants as fsConstants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { MAX_TIMER_MS } from '../constants.ts';
import { describeValue, SystemError, UserError } from '../errors.ts';
import {
  type ChainHead,
  chainCanonical,
  EMPTY_HEAD,
  HASH_MEMBER_CLOSE,
  HASH_MEMBER_OPEN,
  headAfter,
  withHash,
} from './chain.ts';
import { DEFAULT_FSYNC_INTERVAL_MS, DEFAULT_FSYNC_POLICY, JOURNAL_BATCH_MAX_CHARS } from './constants.ts';
import type { AuditEvent, AuditEventInput } from './events.ts';
import { makeDirectories } from './make-directories.ts';
import { type JournalContents, parseJournal } from './reader.ts';
import type { JournalSink } from './sink.ts';

/** When appended events are flushed to disk. */
export type FsyncPolicy = 'always' | 'interval' | 'never';

/** Options of {@link JournalWriter.open}. */
export interface JournalWriterOptions {
  /**
   * `always`: flush each event before `append` returns (crash-safe: nothing acknowledged is lost).
   * `interval`: flush every `intervalMs` and on close (a crash may lose the last interval's events).
   * `never`: leave it to the OS (a machine crash may lose more; a process crash loses nothing).
   * @default 'always'
   */
  readonly fsync?: FsyncPolicy;
  /**
   * Flush period of the `interval` policy: a positive number up to 2147483647 (`MAX_TIMER_MS`,
   * about 24.8 days; Node fires a longer timer at once, so the journal would flush every 1 ms).
   * @default 1000
   */
  readonly intervalMs?: number;
  /**
   * Hold appended events until the next {@link JournalWriter.commit} (or {@link JournalWriter.commitAll},
   * the end of the event-loop turn, {@link JournalWriter.flush}, {@link JournalWriter.close}, or
   * `JOURNAL_BATCH_MAX_CHARS` of pending text) and write them with one system call. The fsync
   * policies then apply per write: under `always`, an event is on disk once `commit` returns,
   * not once `append` returns. Whoever appends must commit before every side effect that depends
   * on the events (the loop does). A write that fails while no one is calling is reported by the
   * next `append`, `commit`, `flush` or `close`.
   * @default false
   */
  readonly batch?: boolean;
  /** Clock for `ts`. @default () => new Date() */
  readonly now?: () => Date;
  /**
   * The file was most likely created empty already, by another thread (the thread engine creates
   * new agents' journals on the main thread, see src/engines/threads/journal-precreator.ts): open
   * it without creating it, and create it only when it is missing. An empty file is a new journal;
   * one with events is continued as always.
   * @default false
   */
  readonly precreated?: boolean;
}

const POLICIES: readonly FsyncPolicy[] = ['always', 'interval', 'never'];

type PreparedOptions = Required<Omit<JournalWriterOptions, 'now' | 'precreated'>> &
  Pick<JournalWriterOptions, 'now'>;

/**
 * Batching writers that appended during this turn, each once (its `#queued` flag): an array
 * emptied by `commitAll`, where a set's add and delete per commit reallocated its table.
 */
const uncommitted: JournalWriter[] = [];
let turnCommitScheduled = false;

/** The end-of-turn commit: events wait in memory for one event-loop turn at most. */
function scheduleTurnCommit(): void {
  if (turnCommitScheduled) return;
  turnCommitScheduled = true;
  setImmediate(() => JournalWriter.commitAll());
}

/** An open journal file. Create with {@link JournalWriter.open}. */
export class JournalWriter implements JournalSink {
  /** The journal file. */
  readonly path: string;
  /** Events already in the file when it was opened. */
  readonly existingEvents: number;
  /** Bytes of a torn last line that were cut away on open (0 when the file ended cleanly). */
  readonly truncatedBytes: number;

  readonly #policy: FsyncPolicy;
  readonly #batch: boolean;
  readonly #now: (() => Date) | undefined;
  /**
   * Lines appended and not yet written (batching writers only), two entries each: the hashed
   * canonical text and its hash (see {@link encodeLines}).
   */
  readonly #pending: string[] = [];
  #pendingChars = 0;
  /** In `uncommitted` until the next `commitAll`. */
  #queued = false;
  #fd: number | undefined;
  #head: ChainHead;
  #agentId: string | undefined;
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;
  #failure: SystemError | undefined;
  #unreported: SystemError | undefined;

  private constructor(
    path: string,
    fd: number,
    contents: JournalContents | undefined,
    options: PreparedOptions,
  ) {
    this.path = path;
    this.#fd = fd;
    this.#policy = options.fsync;
    this.#batch = options.batch;
    this.#now = options.now;
    const events = contents?.events ?? [];
    const last = events.at(-1);
    this.#head = last ? headAfter(last) : EMPTY_HEAD;
    this.#agentId = events[0]?.agentId;
    this.existingEvents = events.length;
    this.truncatedBytes = contents?.tornTailBytes ?? 0;
    if (options.fsync === 'interval') {
      this.#timer = setInterval(() => this.#flushInBackground(), options.intervalMs);
      // A journal must never keep a finished program alive.
      this.#timer.unref();
    }
  }

  /**
   * Opens (creating it and its directory if needed) the journal at `path` for appending. An
   * existing journal's chain continues after its last event; a torn last line is cut away first
   * (see {@link truncatedBytes}). Throws `SystemError('journal_corrupt')` (with the reader's
   * `problems` in its fields) when a complete line is damaged: appending would bury the damage. Throws `UserError('invalid_option')` for
   * bad options and `SystemError('journal_io')` when the file cannot be opened.
   */
  static open(path: string, options: JournalWriterOptions = {}): JournalWriter {
    const prepared = prepareOptions(options);
    // Most journals are new (one per agent): open the empty file someone created, or try to create
    // the file, which is one system call, and read only when it already holds events.
    const created = (options.precreated === true ? openEmpty(path) : undefined) ?? createNew(path);
    if (created !== undefined) {
      if (prepared.fsync !== 'never') syncDirectory(path);
      return new JournalWriter(path, created, undefined, prepared);
    }
    const contents = readExisting(path);
    if (contents && contents.problems.length > 0) {
      const first = contents.problems[0];
      throw new SystemError(
        'journal_corrupt',
        `Expected an intact journal at ${path}, found ${contents.problems.length} damaged line(s)` +
          (first ? ` (first: line ${first.line}: ${first.message})` : ''),
        { path, problems: contents.problems },
      );
    }
    let fd: number | undefined;
    try {
      makeDirectories(dirname(path));
      // 'a' = O_WRONLY | O_CREAT | O_APPEND: every write lands at the current end of the file.
      fd = openSync(path, 'a');
      if (contents && contents.tornTailBytes > 0) {
        ftruncateSync(fd, contents.byteLength - contents.tornTailBytes);
        fdatasyncSync(fd);
      }
    } catch (error) {
      if (fd !== undefined) closeSync(fd);
      throw ioError(path, 'open', error);
    }
    if (!contents && prepared.fsync !== 'never') syncDirectory(path);
    return new JournalWriter(path, fd, contents, prepared);
  }

  /** `seq` the next event will get. */
  get nextSeq(): number {
    return this.#head.nextSeq;
  }

  /** `hash` of the last event (64 zeros for an empty journal). */
  get lastHash(): string {
    return this.#head.lastHash;
  }

  /** True once {@link close} has run (or a write failed). */
  get closed(): boolean {
    return this.#fd === undefined;
  }

  /**
   * Masks secrets, chains and appends one event. Throws `SystemError('journal_closed')` after
   * close, `journal_agent_mismatch` for an event of another agent, `journal_io` when the write fails
   * (the writer is then closed: the file may end torn, which the next open repairs).
   */
  append(input: AuditEventInput): void {
    this.#append(input);
  }

  /** {@link append}, returning the event as stored (parsed back from its line, as a reader sees it). */
  appendEvent(input: AuditEventInput): AuditEvent {
    const canonical = this.#append(input);
    return JSON.parse(withHash(canonical, this.#head.lastHash)) as AuditEvent;
  }

  /** Returns the event's hashed canonical text. */
  #append(input: AuditEventInput): string {
    const fd = this.#fd;
    if (this.#failure) throw this.#reported(this.#failure);
    if (fd === undefined) {
      throw new SystemError('journal_closed', `Expected an open journal, but ${this.path} is closed`, {
        path: this.path,
      });
    }
    if (this.#agentId !== undefined && input.agentId !== this.#agentId) {
      throw new SystemError(
        'journal_agent_mismatch',
        `Expected events of agent ${this.#agentId} in ${this.path}, got one of ${input.agentId}`,
        { path: this.path, expected: this.#agentId, actual: input.agentId },
      );
    }
    const { canonical, head } = chainCanonical(input, this.#head, this.#now);
    if (this.#batch) {
      if (!this.#queued) {
        this.#queued = true;
        uncommitted.push(this);
        scheduleTurnCommit();
      }
      this.#pending.push(canonical, head.lastHash);
      this.#pendingChars += canonical.length + LINE_EXTRA_CHARS;
      this.#head = head;
      this.#agentId = input.agentId;
      if (this.#pendingChars >= JOURNAL_BATCH_MAX_CHARS) this.commit();
      return canonical;
    }
    const single = SINGLE_LINE;
    single[0] = canonical;
    single[1] = head.lastHash;
    try {
      this.#write(fd, single, canonical.length + LINE_EXTRA_CHARS);
    } finally {
      single.length = 0;
    }
    this.#head = head;
    this.#agentId = input.agentId;
    return canonical;
  }

  /**
   * Writes the events appended so far (a batching writer holds them until now; for another writer
   * this does nothing), flushed to disk under the `always` policy. Throws `journal_io` when the
   * write fails (the writer is then closed), or an earlier failure not yet reported.
   */
  commit(): void {
    if (this.#failure) throw this.#reported(this.#failure);
    const fd = this.#fd;
    const pending = this.#pending;
    if (fd === undefined || pending.length === 0) return;
    const chars = this.#pendingChars;
    try {
      this.#write(fd, pending, chars);
    } finally {
      pending.length = 0;
      this.#pendingChars = 0;
    }
  }

  /**
   * Writes the held events of every batching writer of this thread (see
   * {@link JournalWriterOptions.batch}); an actor host calls it before it reports anything to the
   * supervisor. Never throws: a writer whose write fails reports it to its own next caller.
   */
  static commitAll(): void {
    turnCommitScheduled = false;
    // A commit never appends, so the list does not grow while this runs.
    for (let i = 0; i < uncommitted.length; i += 1) {
      const writer = uncommitted[i] as JournalWriter;
      writer.#queued = false;
      if (writer.#pending.length > 0) writer.#commitQuietly();
    }
    uncommitted.length = 0;
  }

  /** {@link commit}, with a failure kept for this writer's next caller. */
  #commitQuietly(): void {
    try {
      this.commit();
    } catch (error) {
      this.#unreported = error as SystemError;
    }
  }

  /** Writes `lines` (pairs of canonical text and hash, `chars` UTF-16 units as stored lines). */
  #write(fd: number, lines: readonly string[], chars: number): void {
    try {
      writeLines(fd, lines, chars);
      if (this.#policy === 'always') fdatasyncSync(fd);
      else this.#dirty = true;
    } catch (error) {
      const failure = ioError(this.path, 'append to', error);
      this.#fail(failure);
      throw failure;
    }
  }

  /** Flushes appended events to disk now, whatever the policy. */
  flush(): void {
    this.commit();
    const fd = this.#fd;
    if (fd === undefined || !this.#dirty) return;
    try {
      fdatasyncSync(fd);
      this.#dirty = false;
    } catch (error) {
      const failure = ioError(this.path, 'flush', error);
      this.#fail(failure);
      throw failure;
    }
  }

  /**
   * Flushes (unless the policy is `never`) and closes the file. Safe to call twice. Throws
   * `SystemError('journal_io')` when the final flush fails, or when a background flush of the
   * `interval` policy failed and no append reported it yet.
   */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#fd !== undefined && this.#pending.length > 0) this.#commitQuietly();
    const unreported = this.#unreported;
    this.#unreported = undefined;
    const fd = this.#fd;
    if (fd === undefined) {
      if (unreported) throw unreported;
      return;
    }
    this.#fd = undefined;
    let failure: SystemError | undefined;
    try {
      if (this.#policy !== 'never' && this.#dirty) fdatasyncSync(fd);
      this.#dirty = false;
    } catch (error) {
      failure = ioError(this.path, 'flush', error);
    }
    try {
      closeSync(fd);
    } catch (error) {
      failure ??= ioError(this.path, 'close', error);
    }
    if (failure) throw failure;
  }

  #flushInBackground(): void {
    try {
      this.flush();
    } catch (error) {
      // No caller to tell now: the next append, flush or close reports it.
      this.#unreported = error as SystemError;
    }
  }

  #reported(error: SystemError): SystemError {
    this.#unreported = undefined;
    return error;
  }

  #fail(error: SystemError): void {
    this.#failure = error;
    this.#pending.length = 0;
    this.#pendingChars = 0;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // The write error is the one worth reporting.
      }
    }
  }
}

function prepareOptions(options: JournalWriterOptions): PreparedOptions {
  const fsync = options.fsync ?? DEFAULT_FSYNC_POLICY;
  if (!POLICIES.includes(fsync)) {
    throw new UserError(
      'invalid_option',
      `Expected \`fsync\` to be one of 'always', 'interval', 'never', got ${describeValue(fsync)}`,
      { path: '/fsync' },
    );
  }
  const intervalMs = options.intervalMs ?? DEFAULT_FSYNC_INTERVAL_MS;
  if (
    typeof intervalMs !== 'number' ||
    !Number.isFinite(intervalMs) ||
    intervalMs <= 0 ||
    intervalMs > MAX_TIMER_MS
  ) {
    throw new UserError(
      'invalid_option',
      `Expected \`intervalMs\` to be a positive number up to ${MAX_TIMER_MS}, got ${describeValue(intervalMs)}`,
      { path: '/intervalMs' },
    );
  }
  const batch = options.batch ?? false;
  if (typeof batch !== 'boolean') {
    throw new UserError('invalid_option', `Expected \`batch\` to be a boolean, got ${describeValue(batch)}`, {
      path: '/batch',
    });
  }
  return { fsync, intervalMs, batch, now: options.now };
}

function readExisting(path: string): (JournalContents & { readonly byteLength: number }) | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw ioError(path, 'read', error);
  }
  return { ...parseJournal(bytes), byteLength: bytes.length };
}

/** `path` opened for appending when it exists and is empty; undefined otherwise. */
function openEmpty(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, APPEND_EXISTING);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw ioError(path, 'open', error);
  }
  try {
    if (fstatSync(fd).size === 0) return fd;
  } catch (error) {
    closeSync(fd);
    throw ioError(path, 'open', error);
  }
  closeSync(fd);
  return undefined;
}

/** O_WRONLY | O_APPEND, without O_CREAT: opening never creates (nor takes the directory's lock to). */
const APPEND_EXISTING = fsConstants.O_WRONLY | fsConstants.O_APPEND;

/**
 * Creates `path` (and its directory) for appending; undefined when it already exists. 'ax' =
 * O_WRONLY | O_CREAT | O_EXCL | O_APPEND.
 */
function createNew(path: string): number | undefined {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return openSync(path, 'ax');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return undefined;
      if (code !== 'ENOENT' || attempt > 0) throw ioError(path, 'open', error);
    }
    try {
      makeDirectories(dirname(path));
    } catch (error) {
      throw ioError(path, 'open', error);
    }
  }
}

/** What a stored line holds beyond its canonical text (see `withHash`): the hash member, less the `}` it replaces, and the newline. */
const LINE_EXTRA_CHARS = HASH_MEMBER_OPEN.length - 1 + 64 + HASH_MEMBER_CLOSE.length + 1;
const LINE_END = `${HASH_MEMBER_CLOSE}\n`;
/** One unbatched line, as `#write` takes it. */
const SINGLE_LINE: string[] = [];

/**
 * Where lines are encoded for their write, kept between writes: encoding each piece of a line
 * into it allocates nothing on the heap, where writing the line as a string built it and then
 * flattened it into one more copy (a journal's lines were ~10 % of an agent's allocation).
 * Writes larger than SCRATCH_MAX_BYTES are built as a string as before, so this stays small.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
const SCRATCH_MAX_BYTES = 1024 * 1024;

/**
 * Writes `lines` (pairs: canonical text ending in `}`, hash) as stored lines (`withHash` of each
 * pair, and a newline), in one system call
 * unless the kernel takes only part. `chars` is their length in UTF-16 units.
 */
function writeLines(fd: number, lines: readonly string[], chars: number): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair: 4 bytes for 2 units).
  const bound = chars * 3;
  if (bound > SCRATCH_MAX_BYTES) {
    writeAll(fd, Buffer.from(linesText(lines), 'utf8'));
    return;
  }
  if (bound > scratch.length)
    scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX_BYTES, 2 ** Math.ceil(Math.log2(bound))));
  const buffer = scratch;
  let at = 0;
  for (let i = 0; i + 1 < lines.length; i += 2) {
    // Drop the canonical text's closing brace: the hash member goes last.
    at += buffer.write(lines[i] as string, at, 'utf8') - 1;
    at += buffer.write(HASH_MEMBER_OPEN, at, 'latin1');
    at += buffer.write(lines[i + 1] as string, at, 'latin1');
    at += buffer.write(LINE_END, at, 'latin1');
  }
  writeAll(fd, buffer.subarray(0, at));
}

/** The stored lines of `lines` (see {@link writeLines}) as one string. */
function linesText(lines: readonly string[]): string {
  let text = '';
  for (let i = 0; i + 1 < lines.length; i += 2) {
    text += `${withHash(lines[i] as string, lines[i + 1] as string)}\n`;
  }
  return text;
}

/** Writes all of `bytes`: one system call, unless the kernel takes only part of it. */
function writeAll(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
}

/** Makes a new file's directory entry durable, so a crash cannot lose the whole journal. */
function syncDirectory(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dirname(path), 'r');
    fsyncSync(fd);
  } catch {
    // Some platforms (Windows) cannot open or fsync a directory; the file itself is still flushed.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function ioError(path: string, action: string, error: unknown): SystemError {
  const errno = (error as NodeJS.ErrnoException).code;
  // The message, not String(error): `Error: ENOENT: ...` said the class name to a user.
  const message = `Could not ${action} journal ${path}: ${error instanceof Error ? error.message : String(error)}`;
  return new SystemError('journal_io', message, { path, errno }, { cause: error });
}
