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
import { SystemError } from '../../errors.ts';
import type { HostCall, SupervisorRequest, ToolSpanAnswer, ToolSpanRequest } from '../../protocol/redis.ts';
import type { ToolOutcome, ToolTraceContext } from '../../tools/types.ts';
import type { BlockingPool } from './blocking-pool.ts';
import {
  HOST_REPLY_POLL_MS,
  REPLY_TTL_MS,
  STREAM_IDLE_TTL_MS,
  SUPERVISOR_ALIVE_MS,
  TOOL_SPAN_WAIT_MS,
} from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';

/**
 * Calls `name` on the supervisor `supervisorId` and waits for its outcome (or the signal). Throws
 * SystemError `supervisor_lost` when the supervisor's heartbeat key is gone (it died or lost Redis
 * for SUPERVISOR_ALIVE_MS): the wait is bounded by that, not only by the agent's signal. With
 * `beats` (the job says its supervisor beats the key: `AgentJobData.supervisorBeats`) the key is
 * read with the call's send, and its absence then or at any later round ends the call at once;
 * without, only once it was seen (a supervisor of an earlier version sets none).
 */
export async function callHostTool(
  redis: Redis,
  pool: BlockingPool,
  keys: ScaleoutKeys,
  supervisorId: string,
  call: Omit<HostCall, 'requestId'>,
  signal: AbortSignal,
  options: { readonly pollMs?: number; readonly beats?: boolean } = {},
): Promise<ToolOutcome> {
  const requestId = randomUUID();
  const stream = keys.requests(supervisorId);
  const alive = keys.supervisorAlive(supervisorId);
  const lost = (): SystemError =>
    new SystemError(
      'supervisor_lost',
      `${call.name} got no answer: supervisor ${supervisorId} stopped reading its requests (no heartbeat for ${SUPERVISOR_ALIVE_MS} ms); the call may or may not have run`,
      { supervisorId, tool: call.name, requestId },
    );
  const sent = await redis
    .pipeline()
    .exists(alive)
    .xadd(stream, '*', 'm', JSON.stringify({ ...call, requestId } satisfies HostCall))
    .pexpire(stream, STREAM_IDLE_TTL_MS)
    .exec();
  // A supervisor that died before the call (its key expired long ago) is known gone at once: the
  // call waits for no round (one that died SUPERVISOR_ALIVE_MS ago had the whole host-call limit).
  let seenAlive = options.beats === true;
  if (sent?.[0]?.[1] === 1) seenAlive = true;
  else if (seenAlive) throw lost();
  // BLPOP in rounds of HOST_REPLY_POLL_MS, checking the supervisor's heartbeat between them: with
  // a BLPOP of no limit, a worker whose supervisor died waited until its agent was cancelled.
  const replyKey = keys.reply(requestId);
  const pollMs = options.pollMs ?? HOST_REPLY_POLL_MS;
  for (;;) {
    const reply = await pool.run<[string, string] | null | typeof CANCELLED>(
      (conn) => conn.blpop(replyKey, pollMs / 1000),
      signal,
      CANCELLED,
    );
    if (reply === CANCELLED) return { ok: false, text: `${call.name} was cancelled.` };
    if (reply !== null) return decodeOutcome(reply[1], call.name);
    if ((await redis.exists(alive)) === 1) {
      seenAlive = true;
    } else if (seenAlive) {
      // Not before the key was seen (unless the job says it beats): a supervisor of an earlier
      // version never sets it.
      throw lost();
    }
  }
}

const CANCELLED = Symbol('cancelled');

/**
 * Asks the supervisor `supervisorId` for the trace context of the `execute_tool` span of a traced
 * agent's tool call (one request and one reply, as a host call): undefined when the agent is not
 * traced there, or when Redis failed; null when no answer came within {@link TOOL_SPAN_WAIT_MS} (a
 * supervisor of an earlier version never answers). The tool then runs in the agent's context.
 */
export async function askToolSpan(
  redis: Redis,
  pool: BlockingPool,
  keys: ScaleoutKeys,
  supervisorId: string,
  request: Omit<ToolSpanRequest, 'type' | 'requestId'>,
): Promise<ToolTraceContext | undefined | null> {
  const requestId = randomUUID();
  const stream = keys.requests(supervisorId);
  const sent: ToolSpanRequest = { type: 'tool_span', requestId, ...request };
  try {
    await redis
      .pipeline()
      .xadd(stream, '*', 'm', JSON.stringify(sent))
      .pexpire(stream, STREAM_IDLE_TTL_MS)
      .exec();
    const reply = await pool.run(
      (conn) => conn.blpop(keys.reply(requestId), TOOL_SPAN_WAIT_MS / 1000),
      AbortSignal.timeout(TOOL_SPAN_WAIT_MS + 1_000),
      null,
    );
    if (reply === null) return null;
    const answer = JSON.parse(reply[1]) as ToolSpanAnswer;
    if (typeof answer.traceparent !== 'string') return undefined;
    return typeof answer.tracestate === 'string'
      ? { traceparent: answer.traceparent, tracestate: answer.tracestate }
      : { traceparent: answer.traceparent };
  } catch {
    return undefined;
  }
}

/** Sends the answer to a tool span request back to the worker waiting for it. */
export async function answerToolSpan(
  redis: Redis,
  keys: ScaleoutKeys,
  requestId: string,
  span: ToolTraceContext | undefined,
): Promise<void> {
  const key = keys.reply(requestId);
  const answer: ToolSpanAnswer = span ?? {};
  await redis.pipeline().lpush(key, JSON.stringify(answer)).pexpire(key, REPLY_TTL_MS).exec();
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

/** A request read from a request stream entry, or undefined when the entry is malformed. */
export function decodeRequest(text: string | undefined): SupervisorRequest | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const { requestId, agentId, name } = value;
    if (typeof requestId !== 'string' || typeof agentId !== 'string' || typeof name !== 'string') {
      return undefined;
    }
    if (value.type === 'tool_span') {
      return typeof value.callId === 'string' && typeof value.at === 'number'
        ? (value as unknown as ToolSpanRequest)
        : undefined;
    }
    if (value.type === undefined && typeof value.args === 'object' && value.args !== null) {
      return value as unknown as HostCall;
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
