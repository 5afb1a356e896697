/** Bounds both engines apply the same way. */

/**
 * Instructions an agent may have been sent and not yet asked for (`wait_for_instruction`) before a
 * send is refused with UserError `instruction_queue_full`.
 */
export const DEFAULT_MAX_PENDING_INSTRUCTIONS = 10_000;
