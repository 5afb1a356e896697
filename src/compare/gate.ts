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
  if (gates.length > 0 && comparison.matched === 0)
    throw new UserError(
      'no_matched_items',
      `Expected the two runs to have items in common to gate on (matched by id, else by position), found none: ${comparison.onlyA} only in A, ${comparison.onlyB} only in B`,
      { onlyA: comparison.onlyA, onlyB: comparison.onlyB },
    );
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
