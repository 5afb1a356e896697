/** Number, time and text formatting shared by progress output, tables and the HTML report. */

/** 1234 -> "1.2k", 5_600_000 -> "5.6M". */
export function formatTokens(count: number): string {
  if (count < 1000) return String(Math.round(count));
  if (count < 1_000_000) return `${(count / 1000).toFixed(count < 10_000 ? 1 : 0)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

/** USD with enough digits to show small amounts: "$0.0123", "$12.34"; `null` (no known price): "unknown". */
export function formatCost(usd: number | null): string {
  if (usd === null) return 'unknown';
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}

/** {@link formatTokens} with a leading `~` when the count was estimated (the server reported none). */
export function formatTokenCount(count: number, estimated: boolean | undefined): string {
  return `${estimated === true ? '~' : ''}${formatTokens(count)}`;
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

/** The first line of `text`, whitespace collapsed, cut to `max` characters with an ellipsis. */
export function excerpt(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, Math.max(0, max - 1))}…` : line;
}

/** A plain-text table: columns padded to their widest cell, the last column left unpadded. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An agent id for people to read: random UUIDs (agents spawned by agents) cut to their first 8 digits. */
export function shortId(agentId: string): string {
  return UUID.test(agentId) ? `${agentId.slice(0, 8)}…` : agentId;
}
