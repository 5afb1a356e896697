/**
 * Deciding approvals of a redis queue from any process (`troupe approve`, a second program): list
 * the requests agents wait on, and decide one. The decision is stored where the agent's worker
 * looks for it, and a parked job is woken; the supervisor that spawned the agent hears of the
 * decision when the agent journals it (its `agent:decision` event).
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { UserError } from '../../errors.ts';
import type { ApprovalDecision, ApprovalRequest } from '../../protocol/approvals.ts';
import { RedisApprovals } from './approvals.ts';
import { bullQueueOptions, closeRedis, connectRedis, resolveRedisUrl, waitForRedis } from './connection.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_KEY_PREFIX, DEFAULT_QUEUE_NAME } from './constants.ts';
import { checkName, ScaleoutKeys } from './keys.ts';
import { bullmq } from './packages.ts';
import { promote } from './promote.ts';

/** Where the queue is. */
export interface RemoteApprovalOptions {
  /** @default `TROUPE_REDIS_URL` */
  readonly redisUrl?: string;
  /** @default 'troupe-agents' */
  readonly queueName?: string;
  /** @default 'troupe' */
  readonly prefix?: string;
  /** @default 10000 */
  readonly connectTimeoutMs?: number;
}

/** A connection that lists and decides a queue's approval requests. Close it when done. */
export class RemoteApprovals {
  readonly #redis: Redis;
  readonly #approvals: RedisApprovals;
  readonly #url: string;
  readonly #keys: ScaleoutKeys;
  #queue: Queue | undefined;

  private constructor(redis: Redis, url: string, keys: ScaleoutKeys) {
    this.#redis = redis;
    this.#url = url;
    this.#keys = keys;
    this.#approvals = new RedisApprovals(redis, keys);
  }

  /** Connects; throws UserError `missing_redis_url` / `invalid_option` or SystemError `redis_unreachable`. */
  static async connect(options: RemoteApprovalOptions = {}): Promise<RemoteApprovals> {
    const url = resolveRedisUrl(options.redisUrl);
    const keys = new ScaleoutKeys(
      checkName('prefix', options.prefix ?? DEFAULT_KEY_PREFIX),
      checkName('queueName', options.queueName ?? DEFAULT_QUEUE_NAME),
    );
    const redis = connectRedis(url, 'troupe-approve');
    redis.on('error', () => {});
    try {
      await waitForRedis(redis, url, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
    } catch (error) {
      redis.disconnect();
      throw error;
    }
    return new RemoteApprovals(redis, url, keys);
  }

  /** Requests waiting for a decision, oldest first. */
  pending(): Promise<ApprovalRequest[]> {
    return this.#approvals.pending();
  }

  /**
   * Decides `requestId`, which may be given by a unique prefix. Throws UserError
   * `approval_not_pending` when no waiting request matches (or several do).
   */
  async decide(requestId: string, decision: ApprovalDecision): Promise<ApprovalRequest> {
    const matches = (await this.pending()).filter((request) => request.requestId.startsWith(requestId));
    const request = matches[0];
    if (request === undefined || matches.length > 1) {
      throw new UserError(
        'approval_not_pending',
        matches.length > 1
          ? `${requestId} matches ${matches.length} waiting requests; give more of the id`
          : `No approval request ${requestId} is waiting on queue ${this.#keys.queue}: it was decided, timed out, or its agent ended`,
        { requestId },
      );
    }
    const result = await this.#approvals.decide(request.agentId, request.requestId, decision);
    if (!result.first) {
      throw new UserError('approval_not_pending', `Request ${request.requestId} was decided meanwhile`, {
        requestId: request.requestId,
      });
    }
    if (result.parked) {
      const { Job, Queue: QueueClass } = bullmq();
      this.#queue ??= new QueueClass(this.#keys.queue, bullQueueOptions(this.#url, this.#keys.prefix));
      this.#queue.on('error', () => {});
      const job = await Job.fromId(this.#queue, request.agentId);
      if (job) await promote(job);
    }
    return request;
  }

  async close(): Promise<void> {
    await this.#queue?.close();
    await closeRedis(this.#redis);
  }
}
