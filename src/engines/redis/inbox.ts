/**
 * An agent's instruction inbox on a Redis Stream: an append-only log like the threads engine's
 * mailbox (src/engines/threads/mailbox.ts). Instruction number `n` (0-based) is entry `<n + 1>-0`, so
 * an agent asks for instruction `n` (how many it has journaled) and a wait repeated after a restart
 * or a park gets the same instruction again: none is lost or delivered twice. Instructions sent
 * before the agent waits are simply already in the log.
 */
import type { Redis } from 'ioredis';
import { UserError, withoutStack } from '../../errors.ts';
import { DEFAULT_MAX_PENDING_INSTRUCTIONS } from '../actor/limits.ts';
import type { BlockingPool } from './blocking-pool.ts';
import type { ScaleoutKeys } from './keys.ts';
import { LuaScript } from './script.ts';

// ARGV[3]: the index the instruction must have, or -1 for the next one. An inbox that already
// holds that many adds nothing (an idempotent re-delivery, exempt from the bound). A new
// instruction is refused (-1, and how many are pending) when the agent has ARGV[2] instructions
// it has not asked for.
const SEND = new LuaScript(
  `
local n = redis.call('XLEN', KEYS[1])
local at = tonumber(ARGV[3])
if at >= 0 and at < n then return {at, redis.call('GET', KEYS[2]) or ''} end
local pending = math.max(0, n - tonumber(redis.call('GET', KEYS[3]) or '0'))
if at < 0 and pending >= tonumber(ARGV[2]) then return {-1, pending} end
redis.call('XADD', KEYS[1], (n + 1) .. '-0', 't', ARGV[1])
return {n, redis.call('GET', KEYS[2]) or ''}
`,
  3,
);

// Records that instruction ARGV[1] was asked for (KEYS[2] holds how many have been: one more than
// the highest number asked for), then answers it if it was sent (entry id ARGV[2]).
const ASK = new LuaScript(
  `
local asked = tonumber(ARGV[1]) + 1
if asked > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], asked) end
local entry = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])[1]
if entry then return entry[2][2] end
return false
`,
  2,
);

/** What a send learned: the instruction's index, and whether the agent's job is parked. */
export interface SentInstruction {
  readonly index: number;
  /** The agent's job was parked when the instruction landed: whoever sent it should promote the job. */
  readonly parked: boolean;
}

/** Reads and writes agents' inboxes. */
export class Inbox {
  readonly #redis: Redis;
  readonly #keys: ScaleoutKeys;
  readonly #maxPending: number;

  constructor(redis: Redis, keys: ScaleoutKeys, maxPending = DEFAULT_MAX_PENDING_INSTRUCTIONS) {
    this.#redis = redis;
    this.#keys = keys;
    this.#maxPending = maxPending;
  }

  /**
   * Appends an instruction (atomically numbered) and reports whether the agent is parked. With
   * `at`, it is instruction number `at`: nothing is added when the inbox already holds that many.
   * Throws UserError `instruction_queue_full` when the agent has `maxPending` instructions it has
   * not asked for (a re-delivery with `at` is exempt).
   */
  async send(agentId: string, text: string, at?: number): Promise<SentInstruction> {
    const reply = (await SEND.run(
      this.#redis,
      [this.#keys.inbox(agentId), this.#keys.parked(agentId), this.#keys.inboxAsked(agentId)],
      [text, String(this.#maxPending), String(at ?? -1)],
    )) as [number, string | number];
    if (Number(reply[0]) === -1) {
      const pending = Number(reply[1]);
      // No stack: a sender past the bound may send thousands more, each refused.
      throw withoutStack(
        () =>
          new UserError(
            'instruction_queue_full',
            `The agent has ${pending} instructions it has not asked for yet (limit ${this.#maxPending}); this one was not sent`,
            { agentId, pending, limit: this.#maxPending },
          ),
      );
    }
    return { index: Number(reply[0]), parked: reply[1] !== '' };
  }

  /** Instruction number `index` if it was sent, recording that the agent has asked for it. */
  async ask(agentId: string, index: number): Promise<string | undefined> {
    const id = `${index + 1}-0`;
    const reply = (await ASK.run(
      this.#redis,
      [this.#keys.inbox(agentId), this.#keys.inboxAsked(agentId)],
      [String(index), id],
    )) as string | null;
    return reply ?? undefined;
  }

  /** Instruction number `index`, if it was sent. */
  async get(agentId: string, index: number): Promise<string | undefined> {
    const id = `${index + 1}-0`;
    const entries = await this.#redis.xrange(this.#keys.inbox(agentId), id, id);
    return entries[0]?.[1][1];
  }

  /**
   * Blocks up to `timeoutMs` (at least 1 ms) on a pooled connection for instruction number
   * `index`; null when the time passed or `signal` aborted.
   */
  wait(
    pool: BlockingPool,
    agentId: string,
    index: number,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<string | null> {
    const key = this.#keys.inbox(agentId);
    const wanted = `${index + 1}-0`;
    return pool.run(
      async (redis) => {
        // XREAD answers entries after the given id: the one after `<index>-0` is instruction `index`.
        const reply = await redis.xread(
          'COUNT',
          1,
          'BLOCK',
          Math.max(1, Math.ceil(timeoutMs)),
          'STREAMS',
          key,
          `${index}-0`,
        );
        const entry = reply?.[0]?.[1][0];
        return entry !== undefined && entry[0] === wanted ? (entry[1][1] ?? null) : null;
      },
      signal,
      null,
    );
  }
}
