/**
 * The CI gate of `troupe compare`: `--gate scorer[:minDelta]` fails the comparison when the
 * scorer's pass rate over the matched items changed by less than `minDelta` (a fraction, default 0:
 * any drop fails; `-0.05` tolerates a drop of up to 5 points; `0.1` demands 10 points of gain).
 */
import { describeValue, UserError } from '../errors.ts';
import type { RunComparison } from './compare.ts';

/** A parsed `--gate` option. */
export interface Gate {
  readonly scorer: string;
  /** @default 0 */
  readonly minDelta: number;
}

/** A gate checked against a comparison. */
export interface GateResult extends Gate {
  readonly passRateA: number;
  readonly passRateB: number;
  readonly delta: number;
  readonly ok: boolean;
}

/** Rounding slack: pass rates are ratios of counts, so equal rates may differ in the last bit. */
const EPSILON = 1e-9;

const GATE = /^([A-Za-z0-9_.-]{1,64})(?::([-+]?(?:\d+(?:\.\d*)?|\.\d+)))?$/;

/** Parses `scorer[:minDelta]`. Throws UserError `invalid_gate` when it is not one. */
export function parseGate(text: string): Gate {
  const match = GATE.exec(text.trim());
  const minDelta = match?.[2] === undefined ? 0 : Number(match[2]);
  if (match?.[1] === undefined || !(minDelta >= -1 && minDelta <= 1))
    throw new UserError(
      'invalid_gate',
      `Expected a gate \`scorer[:minDelta]\` with minDelta from -1 to 1 (e.g. \`exact\`, \`verdict:-0.05\`), got ${describeValue(text)}`,
      { gate: text },
    );
  return { scorer: match[1], minDelta };
}

/**
 * Checks each gate. Throws UserError `unknown_scorer` when a gate names a scorer that is not
 * declared by both runs, and `no_matched_items` when the runs have no item in common (a gate that
 * cannot be checked must not pass silently).
 */
export function checkGates(comparison: RunComparison, gates: readonly Gate[]): GateResult[] {
  if (gates.length > 0 && comparison.matched === 0) {
    const a = runKeys(comparison, 'a');
    const b = runKeys(comparison, 'b');
    throw new UserError(
      'no_matched_items',
      `Expected the two runs to have items in common to gate on, found none: ` +
        `run A: ${describeKeys(a)}; run B: ${describeKeys(b)}. ${whyUnmatched(a, b)}`,
      {
        onlyA: comparison.onlyA,
        onlyB: comparison.onlyB,
        itemsA: a.items,
        itemsB: b.items,
        withIdA: a.withId,
        withIdB: b.withId,
        idsA: a.ids,
        idsB: b.ids,
      },
    );
  }
  return gates.map((gate) => {
    const scorer = comparison.scorers[gate.scorer];
    if (scorer === undefined || scorer.declaredIn !== 'both') {
      const both = Object.values(comparison.scorers)
        .filter((s) => s.declaredIn === 'both')
        .map((s) => s.name);
      throw new UserError(
        'unknown_scorer',
        `Expected the gate's scorer to be declared by both runs (${both.join(', ') || 'none is'}), got ${describeValue(gate.scorer)}`,
        { scorer: gate.scorer },
      );
    }
    return {
      ...gate,
      passRateA: scorer.passRateA,
      passRateB: scorer.passRateB,
      delta: scorer.delta,
      ok: scorer.delta >= gate.minDelta - EPSILON,
    };
  });
}

/** Ids shown of each run in a `no_matched_items` message (and its fields). */
const SHOWN_IDS = 3;

/** How one run's items are keyed: how many, how many with an id, its first ids. */
interface RunKeys {
  readonly items: number;
  readonly withId: number;
  /** Its first {@link SHOWN_IDS} distinct ids, in plan order. */
  readonly ids: readonly string[];
}

function runKeys(comparison: RunComparison, side: 'a' | 'b'): RunKeys {
  let items = 0;
  let withId = 0;
  const ids = new Set<string>();
  for (const item of comparison.items) {
    if (item[side] === undefined) continue;
    items += 1;
    if (item.id === undefined) continue;
    withId += 1;
    if (ids.size < SHOWN_IDS) ids.add(item.id);
  }
  return { items, withId, ids: [...ids] };
}

/** "2 items, 1 with an id (t1)", "2 items, ids t1, t2", "3 items, none with an id". */
function describeKeys(keys: RunKeys): string {
  const items = `${keys.items} item${keys.items === 1 ? '' : 's'}`;
  if (keys.withId === 0) return `${items}, none with an id`;
  const shown =
    keys.ids.map((id) => JSON.stringify(id)).join(', ') + (keys.withId > keys.ids.length ? ', …' : '');
  if (keys.withId === keys.items) return `${items}, ids ${shown}`;
  return `${items}, ${keys.withId} with an id (${shown})`;
}

/** Why nothing matched, by the matching rule, and what to do about it. */
function whyUnmatched(a: RunKeys, b: RunKeys): string {
  const rule =
    'Items are matched by id; an item without one only with the item at the same position in the other run that has no id either';
  const fix =
    'give the same items the same `id` in both plans (or tasks files), or no ids in either to match them by position';
  if (a.items === 0 || b.items === 0) return `${rule}; run ${a.items === 0 ? 'A' : 'B'} has no items.`;
  const reasons: string[] = [];
  if (a.withId > 0 && b.withId > 0) reasons.push('no id is in both runs');
  else if (a.withId > 0 || b.withId > 0)
    reasons.push(`only run ${a.withId > 0 ? 'A' : 'B'} gives ids, so its items with ids match nothing`);
  if (a.withId < a.items && b.withId < b.items)
    reasons.push('no position has an item without an id in both runs');
  else if (a.withId < a.items || b.withId < b.items)
    reasons.push(`run ${a.withId < a.items ? 'B' : 'A'} has no item without an id to match by position`);
  return `${rule}: ${reasons.join(', and ')}. To gate on them, ${fix}.`;
}
