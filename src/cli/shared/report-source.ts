/** What `troupe report` and `troupe show` read besides run directories: one agent's journal file. */
import { statSync } from 'node:fs';
import { UserError } from '../../errors.ts';
import { readJournal } from '../../journal/reader.ts';
import { damageText, journalDamage } from '../../journal/verify.ts';
import { printable } from '../../run-dir/format.ts';
import {
  type DamagedJournal,
  journalTimeline,
  type Timeline,
  type TimelineOptions,
} from '../../run-dir/timeline.ts';

/** True when `target` is a file (a journal) rather than a directory (a run directory). */
export function isJournalFile(target: string): boolean {
  try {
    return statSync(target).isFile();
  } catch {
    return false;
  }
}

/**
 * The timeline of the journal `file`, its agent's `damage` set when the journal is damaged; a file
 * that is no journal fails with `not_a_journal`, a line over `options.maxLineBytes` with
 * `journal_line_too_long`.
 */
export function readJournalTimeline(file: string, options: TimelineOptions = {}): Timeline {
  const contents = readJournal(file, {
    hashes: true,
    ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }),
  });
  const { events } = contents;
  if (events[0]?.type !== 'Started') {
    throw new UserError(
      'not_a_journal',
      `Expected a troupe journal (a JSONL file starting with a Started event) or a run directory at ${file}, found ${events.length === 0 ? 'no events' : `a first event of type ${events[0]?.type}`}`,
      { file },
    );
  }
  const damage = journalDamage(contents);
  return journalTimeline(events, { ...options, ...(damage ? { damage: damageText(damage) } : {}) });
}

/** Damaged journals {@link damageWarnings} names one by one; the rest are counted. */
const WARNED_JOURNALS = 10;

/**
 * The stderr lines of `troupe report` and `troupe show` for damaged journals, one per journal (at
 * most 10, then how many more), each pointing to `troupe verify`; empty when there are none.
 */
export function damageWarnings(damaged: readonly DamagedJournal[]): string {
  const lines = damaged
    .slice(0, WARNED_JOURNALS)
    .map(
      ({ journal, damage }) =>
        `warning: journal ${journal} is damaged: ${damage}; check it with \`troupe verify ${journal}\``,
    );
  if (damaged.length > WARNED_JOURNALS) {
    lines.push(`warning: and ${damaged.length - WARNED_JOURNALS} more damaged journal(s)`);
  }
  return lines.map((line) => `${printable(line)}\n`).join('');
}

/** The summary of a one-agent timeline, as `--json` prints it. */
export function agentSummaryJson(timeline: Timeline): unknown {
  const agent = timeline.agents[0];
  if (agent === undefined) return {};
  const {
    transcript: _transcript,
    spans: _spans,
    markers: _markers,
    roundStarts: _starts,
    ...summary
  } = agent;
  return summary;
}
