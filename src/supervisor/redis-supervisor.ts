/** A Supervisor whose agents run on the redis engine. */
import type { SupervisorOptions } from './options.ts';
import { Supervisor } from './supervisor.ts';

/** Options of {@link RedisSupervisor}: the Supervisor's, whose `backend` it sets to 'redis'. */
export type RedisSupervisorOptions = Omit<SupervisorOptions, 'backend'>;

/**
 * `new Supervisor({ ...options, backend: 'redis' })`: agents run as BullMQ jobs taken by
 * `troupe worker` processes on any machine (see docs/scaleout.md).
 */
export class RedisSupervisor extends Supervisor {
  constructor(options: RedisSupervisorOptions = {}) {
    super({ ...options, backend: 'redis' });
  }
}
