/**
 * The Redis client packages, loaded on first use. The public API and the Supervisor import the
 * redis backend, and a program that only runs threads should not pay ~250 ms of start-up for
 * clients it never opens (bullmq and ioredis are CommonJS, so `require` loads them synchronously
 * wherever the backend first needs them).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The `bullmq` module. */
export function bullmq(): typeof import('bullmq') {
  return require('bullmq') as typeof import('bullmq');
}

/** The `ioredis` module. */
export function ioredis(): typeof import('ioredis') {
  return require('ioredis') as typeof import('ioredis');
}
