/**
 * The terminal event of an agent the thread engine ends itself, while no thread runs it: its
 * restart cap reached, no thread left for it, a quarantine thread that did not start or came too
 * late, a cancel while it waited for a thread; or of one the supervisor ended when its thread died
 * (its result delivered, its cancel under way). Its loop would have written one; without this its
 * journal ends unfinished, and a resumed Supervisor or `troupe report` sees an agent that never
 * ended. Only these rare paths read the journal: a loop's own end costs nothing here.
 */
import type { SerializedError } from '../../errors.ts';
import { isTerminal } from '../../journal/events.ts';
import { readJournal } from '../../journal/reader.ts';
import { JournalWriter } from '../../journal/writer.ts';
import { failedOutcome, journalledOutcome, terminalEvent } from '../../loop/outcome.ts';
import type { AgentOutcome, FailureReason } from '../../loop/types.ts';

/**
 * Ends, failed for `reason` with `error`, an agent that no thread runs (the engine decided it: its
 * restart cap, no thread left for it, a quarantine thread that did not start or came too late, a
 * cancel while it waited for a thread): appends the Failed event to its journal, with what its
 * journal says it spent (as its loop would have), and returns that outcome. See {@link journalOutcome}.
 */
export function journalEnd(
  file: string,
  agentId: string,
  reason: FailureReason,
  error: SerializedError,
  fsync: 'always' | 'interval' | 'never',
): AgentOutcome {
  return journalOutcome(file, failedOutcome(agentId, reason, error), fsync);
}

/**
 * Appends the terminal event of `outcome` (Completed or Failed) to the journal of an agent no
 * thread runs any more, with what its journal says it spent (as its loop would have), and returns
 * the outcome so filled in ({@link journalledOutcome}). It is the engine's end of the agent, or the
 * end the supervisor gave one whose thread died after it delivered its result or while it was
 * being cancelled. A journal that already ends (its thread wrote the terminal event before it
 * died) gets nothing more, and its recorded outcome is returned: the journal and the outcome say
 * the same. A torn last line is cut away when the journal is opened, so the event appended is the
 * one terminal event. No journal or an empty one (the agent never ran), or one that cannot take it
 * (damaged, unwritable), is left as it is: the supervisor still gets the outcome, and the journal
 * then ends without one, as after a crash. With `write` false (a thread that may still write it)
 * the journal is only read: the outcome carries what it says so far, and nothing is appended.
 */
export function journalOutcome(
  file: string,
  ending: AgentOutcome,
  fsync: 'always' | 'interval' | 'never',
  write = true,
): AgentOutcome {
  let outcome = ending;
  let journal: JournalWriter | undefined;
  try {
    const events = readJournal(file).events;
    outcome = journalledOutcome(events, ending);
    // An empty journal (created for a thread that died before the agent started) stays empty: a
    // lone Failed would be a journal without its Started, which nothing can resume or report.
    if (!write || events.length === 0 || events.some(isTerminal)) return outcome;
    journal = JournalWriter.open(file, { fsync: fsync === 'never' ? 'never' : 'always' });
    journal.append(terminalEvent(outcome));
  } catch {
    // See above: the outcome is not lost, only its journal line.
  } finally {
    try {
      journal?.close();
    } catch {
      // A failed flush on close: as above.
    }
  }
  return outcome;
}
