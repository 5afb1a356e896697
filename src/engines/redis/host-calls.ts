/**
 * Host tools over Redis: a worker appends a call to its supervisor's request stream and pops the
 * answer from a reply list of its own (a blocking pop on a pooled connection). Closures stay on the
 * supervisor, as with the thread engine's callback port.
 *
 * A call is delivered at most once per tool call: if the worker dies while waiting, the resumed
 * agent asks the supervisor for the call's kept outcome (`resume: true`) and never repeats it.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { HostCall } from '../../protocol/redis.ts';
import type { ToolOutcome } from '../../tools/types.ts';
import type { BlockingPool } from './blocking-pool.ts';
import { REPLY_TTL_MS, STREAM_IDLE_TTL_MS } from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';

/** Calls `name` on the supervisor `supervisorId` and waits for its outcome (or the signal). */
export async function callHostTool(
  redis: Redis,
  pool: BlockingPool,
  keys: ScaleoutKeys,
  supervisorId: string,
  call: Omit<HostCall, 'requestId'>,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const requestId = randomUUID();
  const stream = keys.requests(supervisorId);
  await redis
    .pipeline()
    .xadd(stream, '*', 'm', JSON.stringify({ ...call, requestId } satisfies HostCall))
    .pexpire(stream, STREAM_IDLE_TTL_MS)
    .exec();
  const reply = await pool.run((conn) => conn.blpop(keys.reply(requestId), 0), signal, null);
  if (reply === null) return { ok: false, text: `${call.name} was cancelled.` };
  return decodeOutcome(reply[1], call.name);
}

/** Sends the outcome of a host call back to the worker waiting for it. */
export async function answerHostCall(
  redis: Redis,
  keys: ScaleoutKeys,
  requestId: string,
  outcome: ToolOutcome,
): Promise<void> {
  const key = keys.reply(requestId);
  const { capture: _capture, ...plain } = outcome;
  await redis.pipeline().lpush(key, JSON.stringify(plain)).pexpire(key, REPLY_TTL_MS).exec();
}

/** A host call read from a request stream entry, or undefined when the entry is malformed. */
export function decodeHostCall(text: string | undefined): HostCall | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<HostCall>;
    if (
      typeof value.requestId === 'string' &&
      typeof value.agentId === 'string' &&
      typeof value.name === 'string' &&
      typeof value.args === 'object' &&
      value.args !== null
    ) {
      return value as HostCall;
    }
  } catch {
    // Malformed: ignored.
  }
  return undefined;
}

function decodeOutcome(text: string, name: string): ToolOutcome {
  try {
    const value = JSON.parse(text) as Partial<ToolOutcome>;
    if (typeof value.ok === 'boolean' && typeof value.text === 'string') return value as ToolOutcome;
  } catch {
    // Reported below.
  }
  return { ok: false, text: `${name} failed: the supervisor sent an unreadable answer.` };
}
