/** What `troupe report` and `troupe show` read besides run directories: one agent's journal file. */
import { statSync } from 'node:fs';
import { UserError } from '../../errors.ts';
import { readJournal } from '../../journal/reader.ts';
import { journalTimeline, type Timeline, type TimelineOptions } from '../../run-dir/timeline.ts';

/** True when `target` is a file (a journal) rather than a directory (a run directory). */
export function isJournalFile(target: string): boolean {
  try {
    return statSync(target).isFile();
  } catch {
    return false;
  }
}

/** The timeline of the journal `file`; a file that is no journal fails with `not_a_journal`. */
export function readJournalTimeline(file: string, options: TimelineOptions = {}): Timeline {
  const { events } = readJournal(file);
  if (events[0]?.type !== 'Started') {
    throw new UserError(
      'not_a_journal',
      `Expected a troupe journal (a JSONL file starting with a Started event) or a run directory at ${file}, found ${events.length === 0 ? 'no events' : `a first event of type ${events[0]?.type}`}`,
      { file },
    );
  }
  return journalTimeline(events, options);
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
