/** The shape every benchmark reports: named figures with a unit and a target, plus free details. */

/** One reported number. `value` and `meets` are null when the figure was skipped or failed. */
export interface Figure {
  readonly value: number | null;
  readonly unit: string;
  /** The target as written in the issue, e.g. `<= 1.10`; null when the figure has none. */
  readonly target: string | null;
  /** Whether `value` meets `target`; null without a target or a value. */
  readonly meets: boolean | null;
  /** Why there is no value. */
  readonly skipped?: string;
}

/** What one benchmark module returns. */
export interface BenchOutput {
  readonly figures: Readonly<Record<string, Figure>>;
  /** Parameters, raw timings and secondary figures, as the benchmark measured them. */
  readonly details: Readonly<Record<string, unknown>>;
}

/** Options every benchmark takes. */
export interface BenchOptions {
  /** The reduced set (`--quick`): smaller N, fewer repetitions. */
  readonly quick: boolean;
}

/** How a figure is compared with its bound. */
export type Comparison = '<=' | '<' | '>=' | '>';

/** A figure compared against `op bound`. */
export function figure(value: number, unit: string, op: Comparison, bound: number, digits = 2): Figure {
  const meets =
    op === '<=' ? value <= bound : op === '<' ? value < bound : op === '>=' ? value >= bound : value > bound;
  return { value: round(value, digits), unit, target: `${op} ${bound}`, meets };
}

/** A figure with no target. */
export function untargeted(value: number, unit: string, digits = 2): Figure {
  return { value: round(value, digits), unit, target: null, meets: null };
}

/** A figure that was not measured, and why. */
export function skipped(unit: string, target: string | null, reason: string): Figure {
  return { value: null, unit, target, meets: null, skipped: reason };
}

/** Rounds to `digits` decimals (figures are reported, not computed with). */
export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
