/** Block ids and version ranges: what a definition may write, checked with the `semver` package. */
import type rcompareFunction from 'semver/functions/rcompare.js';
import type validFunction from 'semver/functions/valid.js';
import type maxSatisfyingFunction from 'semver/ranges/max-satisfying.js';
import type validRangeFunction from 'semver/ranges/valid.js';
import { lazyPackage } from '../require-package.ts';

// The four functions used, not the whole package (half the time of loading `semver`), each loaded
// on first use (src/require-package.ts).
const rcompare = lazyPackage<typeof rcompareFunction>('semver/functions/rcompare.js');
const valid = lazyPackage<typeof validFunction>('semver/functions/valid.js');
const maxSatisfying = lazyPackage<typeof maxSatisfyingFunction>('semver/ranges/max-satisfying.js');
const validRange = lazyPackage<typeof validRangeFunction>('semver/ranges/valid.js');

/**
 * A block id: two or more lowercase slugs joined by dots (`acme.intake`, `team-a.weights.v2`). The
 * dots namespace blocks by owner; the id is also the block's directory name, so it can never hold
 * a path separator or `..`.
 */
export const BLOCK_ID_PATTERN = /^[a-z0-9]+(?:[-_][a-z0-9]+)*(?:\.[a-z0-9]+(?:[-_][a-z0-9]+)*)+$/;

/** True for a valid block id. */
export function isBlockId(value: unknown): value is string {
  return typeof value === 'string' && BLOCK_ID_PATTERN.test(value);
}

/** True for a semver range troupe accepts: what `semver.validRange` reads (an exact version is one). */
export function isVersionRange(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '' && validRange()(value) !== null;
}

/** True for an exact version: `1.2.0`, `2.0.0-beta.1` (no `v` prefix, no range). */
export function isExactVersion(value: unknown): value is string {
  return typeof value === 'string' && valid()(value) === value;
}

/**
 * The highest of `versions` that satisfies `range`, or undefined. Pre-releases count only when the
 * range names one (npm's rule: `^1.2.0-beta.1` may pick `1.2.0-beta.2`, `^1` never picks a beta).
 */
export function highestSatisfying(versions: readonly string[], range: string): string | undefined {
  return maxSatisfying()([...versions], range) ?? undefined;
}

/** `versions` sorted highest first. */
export function sortVersionsDescending(versions: readonly string[]): string[] {
  return [...versions].sort(rcompare());
}
