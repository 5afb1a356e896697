/** Reading projection snapshots back: they come from journals on disk, so nothing is taken on trust. */
import { describeValue, SystemError } from '../errors.ts';
import { PROJECTION_SNAPSHOT_VERSION } from './constants.ts';
import type { ProjectionSnapshot } from './types.ts';

function fail(path: string, expected: string, found: unknown): never {
  throw new SystemError(
    'invalid_projection_snapshot',
    `Expected ${expected} at \`${path || '/'}\` of a projection snapshot, got ${describeValue(found)}`,
    { path },
  );
}

function record(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(path, 'an object', value);
  return value as Record<string, unknown>;
}

function list(value: unknown, path: string): readonly unknown[] {
  if (!Array.isArray(value)) fail(path, 'an array', value);
  return value;
}

function text(value: unknown, path: string): string {
  if (typeof value !== 'string') fail(path, 'a string', value);
  return value;
}

/**
 * Checks that `value` is a projection snapshot and returns it typed. Throws `SystemError`
 * `invalid_projection_snapshot` with the JSON pointer of the first problem.
 */
export function parseProjectionSnapshot(value: unknown): ProjectionSnapshot {
  const root = record(value, '');
  if (root.version !== PROJECTION_SNAPSHOT_VERSION) {
    fail('/version', `version ${PROJECTION_SNAPSHOT_VERSION}`, root.version);
  }
  const context = list(root.context, '/context').map((item, i) => text(item, `/context/${i}`));
  const task = text(root.task, '/task');
  const history = list(root.history, '/history').map((item, i) => {
    const entry = record(item, `/history/${i}`);
    const keys = list(entry.displayedStateKeys, `/history/${i}/displayedStateKeys`);
    return {
      text: text(entry.text, `/history/${i}/text`),
      displayedStateKeys: keys.map((key, j) => text(key, `/history/${i}/displayedStateKeys/${j}`)),
    };
  });
  const seen = new Set<string>();
  const states = list(root.states, '/states').map((item, i) => {
    const state = record(item, `/states/${i}`);
    const key = text(state.key, `/states/${i}/key`);
    if (seen.has(key)) fail(`/states/${i}/key`, 'a key not used by an earlier state', key);
    seen.add(key);
    return { key, text: text(state.text, `/states/${i}/text`) };
  });
  return { version: PROJECTION_SNAPSHOT_VERSION, context, task, history, states };
}
