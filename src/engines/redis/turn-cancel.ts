/**
 * A session's turn cancels over redis: the supervisor stores the latest one under the agent's
 * `turn-cancel` key and announces it on `turnCancelChannel`; the worker running the session
 * applies it when announced, when the subscription comes back, and when a turn starts (a cancel
 * that came before its turn, or before a parked session's job was taken up again).
 */
import type { Redis } from 'ioredis';
import type { TurnCancels } from '../actor/turn-cancels.ts';
import { CANCEL_FLAG_TTL_MS } from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';

/** Stores and announces the cancel of session `agentId`'s turn `turn`. */
export async function sendTurnCancel(
  redis: Redis,
  keys: ScaleoutKeys,
  agentId: string,
  turn: number,
  reason: string,
): Promise<void> {
  await redis.set(keys.turnCancel(agentId), JSON.stringify({ turn, reason }), 'PX', CANCEL_FLAG_TTL_MS);
  await redis.publish(keys.turnCancelChannel, agentId);
}

/** Applies session `agentId`'s stored turn cancel, if any, to `turns` (which ignores an ended turn). */
export async function applyTurnCancel(
  redis: Redis,
  keys: ScaleoutKeys,
  agentId: string,
  turns: TurnCancels,
): Promise<void> {
  const stored = await redis.get(keys.turnCancel(agentId));
  if (stored === null) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return;
  }
  const { turn, reason } = (parsed ?? {}) as { turn?: unknown; reason?: unknown };
  if (typeof turn === 'number' && typeof reason === 'string') turns.cancel(turn, reason);
}
