/**
 * The supervisor's side of its two streams: signals from workers (dispatched as events) and
 * host-tool calls (answered on the supervisor), until the supervisor stops.
 *
 * Entries are read by a Lua script that returns an entry over MAX_STREAM_ENTRY_BYTES as its size
 * and first bytes only, and stops a read at MAX_STREAM_READ_BYTES per stream: XREAD returns
 * entries whole, so one huge entry written into a stream was buffered and parsed whole by the
 * supervisor, and a read of 1,000 entries was bounded by nothing. When both streams have nothing
 * new, a blocking XREAD waits for the next entry (Lua cannot block): COUNT 1, so it returns at most
 * one entry of each stream, two in all, each received whole. Workers write none over
 * MAX_STREAM_ENTRY_BYTES (they split signals under it, and a host call's arguments are far below
 * it), so from them that read is at most twice the bound; a larger entry (another writer's) is
 * refused unparsed, but it was received: every blocking read Redis has (XREAD, BLPOP, a
 * subscription) returns the value that woke it, so only polling would never receive one, at the
 * cost of a poll interval's latency on every host-tool call. Such a writer is trusted anyway: it can
 * forge outcomes and host calls (docs/scaleout.md, "Trust model").
 */
import type { Redis } from 'ioredis';
import type { SupervisorRequest, WorkerSignal } from '../../protocol/redis.ts';
import {
  MAX_STREAM_ENTRY_BYTES,
  MAX_STREAM_READ_BYTES,
  SUPERVISOR_ALIVE_MS,
  SUPERVISOR_HEARTBEAT_MS,
} from './constants.ts';
import { decodeRequest } from './host-calls.ts';
import { supervisorAliveOf } from './keys.ts';
import { LuaScript } from './script.ts';
import { decodeSignals } from './signals.ts';

const READ_BLOCK_MS = 1_000;
/** Entries one read takes from each stream at most (and at most MAX_STREAM_READ_BYTES of them). */
const READ_COUNT = 1_000;
/** Bytes of a refused entry returned, to find the agent it names. */
const REFUSED_HEAD_BYTES = 1_024;

// KEYS: the signal and request streams. ARGV: the last id read of each, entries per stream, the
// largest entry read whole, bytes per stream read, bytes of a refused entry's head. Returns per
// stream its entries: {id, value} or, for one too large, {id, false, size, head}. One XRANGE per
// entry: an XRANGE of many would copy all of them on the server, huge ones included.
const READ = new LuaScript(
  `local result = {}
for k = 1, 2 do
  local from = ARGV[k]
  local entries = {}
  local bytes = 0
  for _ = 1, tonumber(ARGV[3]) do
    local got = redis.call('XRANGE', KEYS[k], '(' .. from, '+', 'COUNT', 1)[1]
    if got == nil then break end
    local value = got[2][2] or ''
    local size = string.len(value)
    if size > tonumber(ARGV[4]) then
      entries[#entries + 1] = {got[1], false, size, string.sub(value, 1, tonumber(ARGV[6]))}
    else
      if #entries > 0 and bytes + size > tonumber(ARGV[5]) then break end
      bytes = bytes + size
      entries[#entries + 1] = {got[1], value}
    end
    from = got[1]
  end
  result[k] = entries
end
return result`,
  2,
);

/** An entry refused unparsed: larger than MAX_STREAM_ENTRY_BYTES. */
export interface RefusedEntry {
  readonly stream: 'signals' | 'requests';
  readonly id: string;
  /** Its size in bytes. */
  readonly size: number;
  /** The first agent id its first bytes name, if any. */
  readonly agentId: string | undefined;
}

/** Options of {@link readSupervisorStreams}. */
export interface StreamReaderOptions {
  readonly reader: Redis;
  readonly signals: string;
  readonly requests: string;
  /** Checked between reads; disconnect `reader` to end a blocked read at once. */
  readonly stopped: () => boolean;
  readonly onSignal: (signal: WorkerSignal) => void;
  readonly onCall: (call: SupervisorRequest) => void;
  /** An entry too large to read (see MAX_STREAM_ENTRY_BYTES). */
  readonly onRefused: (entry: RefusedEntry) => void;
  /**
   * The heartbeat key workers check while they wait for a host call's reply, set every
   * SUPERVISOR_HEARTBEAT_MS. @default the one beside `requests` (keys.ts `supervisorAliveOf`)
   */
  readonly alive?: string;
  /** Bounds, for tests. @default MAX_STREAM_ENTRY_BYTES, MAX_STREAM_READ_BYTES */
  readonly maxEntryBytes?: number;
  readonly maxReadBytes?: number;
}

type Entry =
  | readonly [id: string, value: string]
  | readonly [id: string, refused: null, size: number, head: string];

/** Reads both streams from their start until `stopped()`. Never rejects. */
export async function readSupervisorStreams(options: StreamReaderOptions): Promise<void> {
  const { reader, signals, requests } = options;
  const maxEntryBytes = options.maxEntryBytes ?? MAX_STREAM_ENTRY_BYTES;
  const maxReadBytes = options.maxReadBytes ?? MAX_STREAM_READ_BYTES;
  const from = { signals: '0-0', requests: '0-0' };
  const alive = options.alive ?? supervisorAliveOf(requests);
  let beatAt = Number.NEGATIVE_INFINITY;
  const handle = (stream: 'signals' | 'requests', entry: Entry): void => {
    const [id, value] = entry;
    from[stream] = id;
    if (typeof value !== 'string') {
      options.onRefused({ stream, id, size: entry[2] ?? 0, agentId: namedAgent(entry[3] ?? '') });
    } else if (Buffer.byteLength(value) > maxEntryBytes) {
      // The blocking read's entry: received whole, but never parsed.
      options.onRefused({
        stream,
        id,
        size: Buffer.byteLength(value),
        agentId: namedAgent(value.slice(0, REFUSED_HEAD_BYTES)),
      });
    } else if (stream === 'signals') {
      for (const signal of decodeSignals(value)) options.onSignal(signal);
    } else {
      const call = decodeRequest(value);
      if (call) options.onCall(call);
    }
  };
  while (!options.stopped()) {
    try {
      // A read blocks READ_BLOCK_MS at most, so the loop beats while the supervisor lives.
      if (Date.now() - beatAt >= SUPERVISOR_HEARTBEAT_MS) {
        await reader.set(alive, '1', 'PX', SUPERVISOR_ALIVE_MS);
        beatAt = Date.now();
      }
      const read = (await READ.run(
        reader,
        [signals, requests],
        [from.signals, from.requests, READ_COUNT, maxEntryBytes, maxReadBytes, REFUSED_HEAD_BYTES],
      )) as [Entry[], Entry[]];
      for (const entry of read[0]) handle('signals', entry);
      for (const entry of read[1]) handle('requests', entry);
      if (read[0].length > 0 || read[1].length > 0) continue;
      const reply = (await reader.xread(
        'COUNT',
        1,
        'BLOCK',
        READ_BLOCK_MS,
        'STREAMS',
        signals,
        requests,
        from.signals,
        from.requests,
      )) as [string, [string, string[]][]][] | null;
      for (const [key, entries] of reply ?? []) {
        for (const [id, fields] of entries)
          handle(key === signals ? 'signals' : 'requests', [id, fields[1] ?? '']);
      }
    } catch {
      if (options.stopped()) return;
      // The client reconnects by itself; ask again.
    }
  }
}

/** The first `"agentId":"..."` in `head`. */
function namedAgent(head: string): string | undefined {
  return /"agentId":"([^"\\]{1,200})"/.exec(head)?.[1];
}
