/** Number, time and text formatting shared by progress output, tables and the HTML report. */
import { redactText } from '../journal/redact.ts';
import { displayWidth, fitWidth, padWidth } from './text-width.ts';

/**
 * Characters a terminal acts on instead of showing: C0 controls but tab and newline (ESC starts
 * escape sequences that move the cursor, retitle the window or clear the screen; BEL rings; NUL
 * and CR hide what came before), DEL, C1 controls (U+009B is a one-byte CSI), and the Unicode
 * bidirectional overrides and isolates, which make text display in another order than it reads.
 */
const CONTROL_CHARS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * ESC-introduced sequences (CSI, OSC up to BEL or ST, any other two-character escape) and the
 * one-byte C1 CSI, removed with their parameters so no `[31m` residue is left once the ESC itself
 * is gone.
 */
const ESCAPE_SEQUENCES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping escape sequences is the point
  /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-_])?|\u009b[0-?]*[ -/]*[@-~]/g;

/** `text` without escape sequences and terminal control characters (see CONTROL_CHARS); tabs and newlines stay. */
export function stripControl(text: string): string {
  return text.replace(ESCAPE_SEQUENCES, '').replace(CONTROL_CHARS, '');
}

/** Characters JSON.stringify leaves raw that a terminal may act on or display out of order. */
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `JSON.stringify(value, null, indent)` with DEL, C1 controls and bidi overrides escaped as
 * `\uXXXX` (JSON.stringify escapes only C0): the same value for a program reading it, nothing a
 * terminal acts on for a person watching it.
 */
export function terminalJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    RAW_IN_JSON,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * Model or tool text made safe to print or show: credentials masked (the journal's redaction) and
 * control characters removed. Everything troupe prints that a model wrote goes through here.
 */
export function printable(text: string): string {
  return stripControl(redactText(text));
}

/**
 * A count for people: 950 -> "950", 1234 -> "1.2k", 12_345 -> "12k", 2_550_000 -> "2.6M". Rounded
 * half up on the integer of the shown digits (`toFixed` on 2.55 gives 2.5: 2.55 is 2.5499... as
 * a double).
 */
export function formatTokens(count: number): string {
  if (count < 1000) return String(Math.round(count));
  const tenths = (value: number): string => (Math.round(value * 10) / 10).toFixed(1);
  if (count < 9_950) return `${tenths(count / 1000)}k`;
  if (count < 999_500) return `${Math.round(count / 1000)}k`;
  return `${tenths(count / 1_000_000)}M`;
}

/** USD with enough digits to show small amounts: "$0.0123", "$12.34"; `null` (no known price): "unknown". */
export function formatCost(usd: number | null): string {
  if (usd === null) return 'unknown';
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}

/**
 * {@link formatTokens} with a leading `~` when the count was estimated. For one side of a usage,
 * pass {@link sideEstimated} (only the side troupe estimated is marked); for a total, `usage.estimated`.
 */
export function formatTokenCount(count: number, estimated: boolean | undefined): string {
  return `${estimated === true ? '~' : ''}${formatTokens(count)}`;
}

/** The usage fields the estimate marks read (`Usage`, summed or per request). */
export interface EstimatedUsage {
  readonly estimated?: boolean;
  readonly estimatedSide?: 'input' | 'output';
}

/**
 * Whether `side` of `usage` was estimated: both sides when the server reported no usage
 * (`estimatedSide` absent), else only the side `estimatedSide` names.
 */
export function sideEstimated(usage: EstimatedUsage, side: 'input' | 'output'): boolean {
  return usage.estimated === true && (usage.estimatedSide === undefined || usage.estimatedSide === side);
}

/**
 * Why counts of `usage` start with `~`: `estimated: the server reported no usage`, or only the side
 * it estimated (`...no readable output count`); undefined when nothing was estimated.
 */
export function estimateNote(usage: EstimatedUsage): string | undefined {
  if (usage.estimated !== true) return undefined;
  return usage.estimatedSide === undefined
    ? 'estimated: the server reported no usage'
    : `estimated: the server reported no readable ${usage.estimatedSide} count`;
}

/** 950 -> "950ms", 3200 -> "3.2s", 125000 -> "2m05s", 4000000 -> "1h06m". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const whole = Math.round(seconds);
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * The first line of `text`, whitespace collapsed, cut to `max` terminal columns with an ellipsis
 * (never inside a grapheme); {@link printable} (masked, no control characters).
 */
export function excerpt(text: string, max: number): string {
  return fitWidth(printable(text).replace(/\s+/g, ' ').trim(), max);
}

/** A plain-text table: columns padded to their widest cell, the last column left unpadded. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, displayWidth(cell));
    });
  }
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : padWidth(cell, widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * The lines {@link table} makes of the rows `rows()` gives, made a line at a time: `rows` is called
 * twice (once for the column widths, once for the lines), so no line or row need be held all along.
 */
export function* tableLines(rows: () => Iterable<readonly string[]>): Generator<string> {
  const widths: number[] = [];
  for (const row of rows()) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, displayWidth(cell));
    });
  }
  for (const row of rows()) {
    yield row
      .map((cell, column) => (column === row.length - 1 ? cell : padWidth(cell, widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An agent id for people to read: random UUIDs (agents spawned by agents) cut to their first 8 digits. */
export function shortId(agentId: string): string {
  return UUID.test(agentId) ? `${agentId.slice(0, 8)}…` : agentId;
}
