/**
 * Runs once before the test files. Worker threads and CLI processes of a source checkout start from
 * a cached bundle of the sources (workers/dev-bundle.mjs), rebuilt when a source file changed: it
 * is brought up to date here, once, instead of by the first threads that race to start.
 */
// @ts-expect-error: a plain ESM module of the checkout, without declarations
import { devBundle } from '../workers/dev-bundle.mjs';

export default async function setup(): Promise<void> {
  await devBundle('cli');
}
