/**
 * The one gate between text troupe did not write (agent answers, task texts, scorer details, file
 * names) and the terminal. Control characters could move the cursor, rewrite earlier lines, set
 * the window title or hide text; secrets in an answer should not land in a CI log.
 *
 * TODO(hostile): issue 23 adds control-character stripping and redaction for every artefact;
 * when that function lands, this one should become a call to it. Every output of `troupe score`
 * and `troupe compare` already goes through here, so the swap is one line.
 */
import { redactText } from '../../journal/redact.ts';

// ESC-introduced sequences first (CSI, OSC up to BEL or ST, then any other two-character escape),
// so their parameters are removed along with the ESC; then every other C0/C1 control except tab
// and newline, DEL, and the bidirectional overrides that can reorder what a terminal shows.
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping escape sequences is the point.
const ESCAPES = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-_])?/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point.
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` safe to print: escape sequences and control characters removed, secret-looking strings masked. */
export function terminalText(text: string): string {
  return redactText(text.replace(ESCAPES, '').replace(CONTROLS, ''));
}
