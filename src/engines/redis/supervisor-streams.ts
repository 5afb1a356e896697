/**
 * The supervisor's side of its two streams: signals from workers (dispatched as events) and
 * host-tool calls (answered on the supervisor), read with one blocking XREAD on a dedicated
 * connection until the supervisor stops.
 */
import type { Redis } from 'ioredis';
import type { SupervisorRequest, WorkerSignal } from '../../protocol/redis.ts';
import { decodeRequest } from './host-calls.ts';
import { decodeSignals } from './signals.ts';

const READ_BLOCK_MS = 1_000;
const READ_COUNT = 1_000;

/** Options of {@link readSupervisorStreams}. */
export interface StreamReaderOptions {
  readonly reader: Redis;
  readonly signals: string;
  readonly requests: string;
  /** Checked between reads; disconnect `reader` to end a blocked read at once. */
  readonly stopped: () => boolean;
  readonly onSignal: (signal: WorkerSignal) => void;
  readonly onCall: (call: SupervisorRequest) => void;
}

/** Reads both streams from their start until `stopped()`. Never rejects. */
export async function readSupervisorStreams(options: StreamReaderOptions): Promise<void> {
  const { reader, signals, requests } = options;
  let signalsFrom = '0-0';
  let requestsFrom = '0-0';
  while (!options.stopped()) {
    let reply: [string, [string, string[]][]][] | null;
    try {
      reply = (await reader.xread(
        'COUNT',
        READ_COUNT,
        'BLOCK',
        READ_BLOCK_MS,
        'STREAMS',
        signals,
        requests,
        signalsFrom,
        requestsFrom,
      )) as [string, [string, string[]][]][] | null;
    } catch {
      if (options.stopped()) return;
      // The client reconnects by itself; ask again.
      continue;
    }
    for (const [key, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        if (key === signals) {
          signalsFrom = id;
          for (const signal of decodeSignals(fields[1])) options.onSignal(signal);
        } else {
          requestsFrom = id;
          const call = decodeRequest(fields[1]);
          if (call) options.onCall(call);
        }
      }
    }
  }
}
