/**
 * troupe's error hierarchy. Every error carries a literal `code` and structured `fields`, so callers
 * can branch on the code rather than the class: instances that cross a worker thread lose their
 * class (structured clone keeps only plain data), see {@link isTroupeError}.
 */

/** Structured data attached to an error: file/line/column for definitions, status for providers. */
export type ErrorFields = Readonly<Record<string, unknown>>;

const BRAND = Symbol.for('troupe.error');

/** Base class of every error troupe throws on purpose. */
export class TroupeError extends Error {
  /** Stable machine-readable code, e.g. `invalid_field`, `rate_limited`. */
  readonly code: string;
  /** Structured fields, e.g. `{ file, line, column, path }` or `{ provider, status, retryAfterMs }`. */
  readonly fields: ErrorFields;
  readonly [BRAND] = true;

  constructor(code: string, message: string, fields: ErrorFields = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.fields = fields;
  }

  /** Plain data for logs, journals and cross-thread messages. */
  toJSON(): SerializedError {
    return { name: this.name, code: this.code, message: this.message, fields: { ...this.fields } };
  }
}

/**
 * `build()`'s error without a stack trace (its `stack` is only its name and message), for refusals
 * that can come by the thousand: each send past a full instruction queue. A stack per error made
 * 100,000 sends to a parked agent cost about 1 KB of heap each.
 */
export function withoutStack<T extends Error>(build: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return build();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The user's input is wrong: a definition file, an option, a plan. */
export class UserError extends TroupeError {}

/** A model provider failed: HTTP status, rate limit, bad stream. */
export class ProviderError extends TroupeError {}

/** The model behaved in a way the loop cannot accept (no required tool call after retries...). */
export class ModelBehaviorError extends TroupeError {}

/** troupe itself or its environment failed: a thread crashed, a journal is corrupt, I/O. */
export class SystemError extends TroupeError {}

/** An error as plain data: what crosses threads and goes into journals. */
export interface SerializedError {
  readonly name: string;
  readonly code: string;
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

/** True for troupe errors, including ones rebuilt after crossing a thread. */
export function isTroupeError(value: unknown): value is TroupeError {
  return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
}

/** True when `value` is a troupe error with the given code. */
export function hasErrorCode(value: unknown, code: string): boolean {
  return isTroupeError(value) && value.code === code;
}

const CLASSES: Record<string, new (code: string, message: string, fields?: ErrorFields) => TroupeError> = {
  TroupeError,
  UserError,
  ProviderError,
  ModelBehaviorError,
  SystemError,
};

/** Turns any thrown value into plain data. Non-troupe errors get code `internal`. */
export function serializeError(error: unknown): SerializedError {
  if (isTroupeError(error)) return error.toJSON();
  if (error instanceof Error) {
    return { name: error.name, code: 'internal', message: error.message, fields: {} };
  }
  return { name: 'Error', code: 'internal', message: String(error), fields: {} };
}

/** Rebuilds an error from plain data, keeping its class when it is one of troupe's. */
export function deserializeError(data: SerializedError): TroupeError {
  const Class = CLASSES[data.name] ?? SystemError;
  const error = new Class(data.code, data.message, data.fields);
  if (!(data.name in CLASSES)) error.name = data.name;
  return error;
}

/** Describes a value for error messages: "`0` (number)". */
export function describeValue(value: unknown): string {
  if (value === null) return '`null`';
  if (Array.isArray(value)) return `\`${JSON.stringify(value)}\` (array)`;
  if (typeof value === 'object') return 'an object';
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return `\`${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown}\` (${typeof value})`;
}

/**
 * An error text as a person should read it: an HTML error page (a proxy's 502, a server's 404)
 * reduced to its text, whitespace collapsed; any other text as it is. Cut it afterwards.
 */
export function readableErrorText(text: string): string {
  if (!/<(?:!doctype|html|body|pre)\b/i.test(text)) return text;
  return text
    .replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
