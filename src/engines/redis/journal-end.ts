/**
 * The terminal event of an agent the redis engine ends while no worker runs it: its job failed
 * for good (its run failed past its retries, its workers died past `maxStalledCount`), its job is
 * gone from Redis, or it was cancelled and no worker ended it within `graceMs`. Its loop would have
 * written one; without it the journal ends unfinished, and a resumed Supervisor, `troupe resume` or
 * `troupe report` sees an agent that never ended. Only these rare paths read the journal.
 */
import type { Redis } from 'ioredis';
import { isTerminal } from '../../journal/events.ts';
import { journalledOutcome, recordedOutcome, terminalEvent } from '../../loop/outcome.ts';
import type { AgentOutcome } from '../../loop/types.ts';
import { RedisJournal, readRedisJournal } from './stream-journal.ts';

/**
 * Appends the terminal event of `ending` to the journal stream `key`, with what the journal says
 * the agent spent, and resolves with the outcome so filled in ({@link journalledOutcome}). The
 * append is the journal's compare-and-append: a worker that wrote its own end first wins, and its
 * recorded outcome is the one returned, so journal and outcome agree, and a worker still writing
 * after it is refused (its run stops). A journal that cannot be read or written (Redis failed) is left as
 * it is: the outcome is not lost, only its journal entry. Never rejects.
 */
export async function journalOutcome(redis: Redis, key: string, ending: AgentOutcome): Promise<AgentOutcome> {
  let outcome = ending;
  try {
    const events = await readRedisJournal(redis, key);
    outcome = journalledOutcome(events, ending);
    // An empty journal (the agent never ran) stays empty: a lone Failed would be a journal
    // without its Started, which nothing can resume or report.
    if (events.length === 0 || events.some(isTerminal)) return outcome;
    const journal = new RedisJournal({ redis, key, events });
    journal.append(terminalEvent(outcome));
    try {
      await journal.flushed();
    } catch {
      // Refused: another writer appended meanwhile. Its end, if it wrote one, is the outcome.
      const ended = (await readRedisJournal(redis, key)).find(isTerminal);
      if (ended !== undefined) return recordedOutcome(ended);
    }
  } catch {
    // See above.
  }
  return outcome;
}
