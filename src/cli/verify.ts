/**
 * `troupe verify JOURNAL`: checks a journal's hash chain and re-derives the input of every model
 * request (each round's render, plus the continuation of a later request in the round) from the
 * journal to compare it with the hash recorded when it was sent. Exits 0 when it verifies, 1 at the
 * first bad event.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { AuditEvent } from '../journal/events.ts';
import { readJournal } from '../journal/reader.ts';
import { type FileVerifyResult, verifyJournalContents } from '../journal/verify.ts';
import { journalRerender } from '../loop/rerender.ts';
import { COMMAND_HELP } from './commands.ts';
import { EXIT_FAILED, EXIT_OK } from './shared/constants.ts';
import type { CliIO } from './shared/io.ts';

/** Registers `troupe verify` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('verify')
    .description(COMMAND_HELP.verify.description)
    .argument('<journal>', 'journal file')
    .option('--json', 'print the result as JSON')
    .action((file: string, flags: { json?: boolean }) => {
      const path = resolve(file);
      const contents = readJournal(path, { hashes: true });
      const result = verifyJournalContents(contents, { rerender: journalRerender() });
      const ending = endingOf(contents.events);
      const rounds = verifiedRounds(contents.events, result.checkedInferences);
      if (flags.json) {
        io.stdout(
          `${JSON.stringify({
            ok: result.ok,
            journal: path,
            events: result.checkedEvents,
            requests: result.checkedInferences,
            rounds,
            tornTail: result.tornTail,
            tornTailBytes: contents.tornTailBytes,
            ending,
            ...(result.firstBad ? { firstBad: result.firstBad } : {}),
          })}\n`,
        );
      } else {
        io.stdout(verifyText(result, rounds, contents.tornTailBytes, ending));
      }
      setExit(result.ok ? EXIT_OK : EXIT_FAILED);
    });
}

/** How the journal's agent ended, as far as its events say. */
type Ending = 'completed' | 'failed' | 'not_ended';

function endingOf(events: readonly AuditEvent[]): Ending {
  const last = events.at(-1);
  if (last?.type === 'Completed') return 'completed';
  if (last?.type === 'Failed') return 'failed';
  return 'not_ended';
}

/** Distinct rounds among the first `requests` model requests of the journal. */
function verifiedRounds(events: readonly AuditEvent[], requests: number): number {
  const submitted = events.filter((event) => event.type === 'InferenceSubmitted').slice(0, requests);
  return new Set(submitted.map((event) => event.round)).size;
}

function verifyText(result: FileVerifyResult, rounds: number, tornTailBytes: number, ending: Ending): string {
  const bad = result.firstBad;
  if (!result.ok && bad) {
    return (
      `seq ${bad.seq}: ${bad.reason}: ${bad.message}\n` +
      `(${result.checkedEvents} event(s) before it verified)\n`
    );
  }
  const requests = `${result.checkedInferences} model request${result.checkedInferences === 1 ? '' : 's'}`;
  const lines = [
    `ok: ${result.checkedEvents} events, ${requests} in ${rounds} round${rounds === 1 ? '' : 's'} verified`,
  ];
  if (result.tornTail) {
    lines.push(
      `torn last line ignored: ${tornTailBytes} bytes after the last complete event (a crash during an append; not damage)`,
    );
  }
  lines.push(
    ending === 'not_ended'
      ? 'the agent has not ended: continue it with `troupe resume`'
      : `the agent ${ending}`,
  );
  return `${lines.join('\n')}\n`;
}
