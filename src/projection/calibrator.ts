/**
 * Per-model calibration of token estimates from provider receipts. A counter can be off for a model
 * (the heuristic for Claude, any counter for the framing a provider adds), so the calibrator keeps,
 * per model, an exponentially weighted moving average of actual / estimated input tokens and scales
 * later estimates by it. It never scales below a safety floor (1 by default): a model that turns out
 * cheaper than estimated does not make the budget looser than the raw count.
 */
import { describeValue, UserError } from '../errors.ts';
import { DEFAULT_CALIBRATION } from './constants.ts';

/** What a provider reported for one request, next to what was estimated for it. */
export interface CalibrationReceipt {
  readonly model: string;
  /** Input tokens the provider billed for the request. */
  readonly actualInputTokens: number;
  /** The raw (uncalibrated) estimate for the same request, e.g. `Projection.tokenEstimate().rawTokens`. */
  readonly estimatedTokens: number;
}

/** One model's learned correction. */
export interface ModelCalibration {
  /** Moving average of actual / estimated. */
  readonly factor: number;
  /** Receipts that went into it. */
  readonly samples: number;
}

/** Options of {@link Calibrator}; a value out of range throws UserError `invalid_option`. */
export interface CalibratorOptions {
  /**
   * Weight of the newest receipt, in (0, 1]. The first receipt sets the factor outright.
   * @default 0.3
   */
  readonly smoothing?: number;
  /**
   * Calibrated estimates are never below `raw * safetyFloor`. Must be > 0.
   * @default 1
   */
  readonly safetyFloor?: number;
  /** Ratios below this are clamped to it. @default 0.25 */
  readonly minRatio?: number;
  /** Ratios above this are clamped to it. @default 4 */
  readonly maxRatio?: number;
  /** Calibrations to start from, e.g. from `snapshot()` of an earlier run. */
  readonly initial?: Readonly<Record<string, ModelCalibration>>;
}

function positive(name: string, value: number, max = Number.POSITIVE_INFINITY): number {
  if (!Number.isFinite(value) || value <= 0 || value > max) {
    const range = max === Number.POSITIVE_INFINITY ? 'a positive number' : `a number in (0, ${max}]`;
    throw new UserError(
      'invalid_option',
      `Expected \`${name}\` to be ${range}, got ${describeValue(value)}`,
      {
        option: name,
      },
    );
  }
  return value;
}

/** Learns, per model, how far estimates are from what providers bill. */
export class Calibrator {
  readonly #smoothing: number;
  readonly #safetyFloor: number;
  readonly #minRatio: number;
  readonly #maxRatio: number;
  readonly #models = new Map<string, ModelCalibration>();

  constructor(options: CalibratorOptions = {}) {
    this.#smoothing = positive('smoothing', options.smoothing ?? DEFAULT_CALIBRATION.smoothing, 1);
    this.#safetyFloor = positive('safetyFloor', options.safetyFloor ?? DEFAULT_CALIBRATION.safetyFloor);
    this.#minRatio = positive('minRatio', options.minRatio ?? DEFAULT_CALIBRATION.minRatio);
    this.#maxRatio = positive('maxRatio', options.maxRatio ?? DEFAULT_CALIBRATION.maxRatio);
    if (this.#minRatio > this.#maxRatio) {
      throw new UserError(
        'invalid_option',
        `Expected \`minRatio\` (${this.#minRatio}) to be at most \`maxRatio\` (${this.#maxRatio})`,
        { option: 'minRatio' },
      );
    }
    for (const [model, calibration] of Object.entries(options.initial ?? {})) {
      positive(`initial.${model}.factor`, calibration.factor);
      this.#models.set(model, { factor: calibration.factor, samples: calibration.samples });
    }
  }

  /**
   * Takes a receipt into account. Receipts without a usable count (zero, negative, not finite: some
   * providers report no usage) are ignored; returns whether this one was used.
   */
  record(receipt: CalibrationReceipt): boolean {
    const { actualInputTokens: actual, estimatedTokens: estimate } = receipt;
    if (!Number.isFinite(actual) || !Number.isFinite(estimate) || actual <= 0 || estimate <= 0) return false;
    const ratio = Math.min(this.#maxRatio, Math.max(this.#minRatio, actual / estimate));
    const previous = this.#models.get(receipt.model);
    const factor =
      previous === undefined ? ratio : previous.factor + this.#smoothing * (ratio - previous.factor);
    this.#models.set(receipt.model, { factor, samples: (previous?.samples ?? 0) + 1 });
    return true;
  }

  /** The learned factor for `model`; 1 before any receipt. */
  factor(model: string): number {
    return this.#models.get(model)?.factor ?? 1;
  }

  /** `rawTokens` scaled by the model's factor, never below `rawTokens * safetyFloor`; an integer. */
  adjust(model: string, rawTokens: number): number {
    const scale = Math.max(this.factor(model), this.#safetyFloor);
    return scale === 1 ? rawTokens : Math.ceil(rawTokens * scale);
  }

  /** Plain data to persist and pass back as `initial`. */
  snapshot(): Record<string, ModelCalibration> {
    return Object.fromEntries(this.#models);
  }
}
