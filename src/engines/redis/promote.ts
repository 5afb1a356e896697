/**
 * Waking a parked agent job. Its own module, with bullmq as a type only: the supervisor side needs
 * it, and must not load bullmq before it connects (see connection.ts).
 */
import type { Job } from 'bullmq';

/** Moves a parked job back to the wait list; a job that is no longer delayed is left alone. */
export async function promote(job: Job): Promise<void> {
  try {
    await job.promote();
  } catch {
    // Already promoted, or running again: nothing to do.
  }
}
