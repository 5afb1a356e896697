/**
 * `troupe compare RUN_A RUN_B [--html FILE] [--gate scorer[:minDelta]]... [--json] [--all] [--[no-]tool-calls]`:
 * item by item and in total, what changed from run A (the baseline) to run B. Exits 1 when a
 * gate fails (a scorer's pass rate dropped by more than allowed), so it can stop a CI job.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { compareRunDirs, type RunComparison } from '../compare/compare.ts';
import { compareHtmlPieces } from '../compare/compare-html.ts';
import { compareJsonPieces } from '../compare/compare-json.ts';
import { compareTextPieces } from '../compare/compare-text.ts';
import { checkGates, type Gate, type GateResult, parseGate } from '../compare/gate.ts';
import { COMPARE_TOOL_CALL_ITEMS } from '../constants.ts';
import { isTroupeError } from '../errors.ts';
import { printable } from '../run-dir/format.ts';
import { COMMAND_HELP } from './commands.ts';
import { EXIT_FAILED, EXIT_OK } from './shared/constants.ts';
import { type CliIO, outputColumns } from './shared/io.ts';

interface CompareFlags {
  readonly html?: string;
  readonly gate?: readonly Gate[];
  readonly json?: boolean;
  readonly all?: boolean;
  readonly toolCalls?: boolean;
}

/** Registers `troupe compare` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('compare')
    .description(COMMAND_HELP.compare.description)
    .argument('<run-a>', 'the baseline run directory')
    .argument('<run-b>', 'the run to compare with it')
    .option('--html <file>', 'also write a self-contained HTML page')
    .option(
      '--gate <scorer[:minDelta]>',
      'fail (exit 1) when the pass rate of `scorer` changes by less than minDelta (default 0: any drop); repeatable',
      collectGate,
    )
    .option('--json', 'print the comparison (and gate results) as JSON')
    .option('--all', 'list every item, not only the changed ones')
    .option(
      '--tool-calls',
      `compare the tool calls, from the journals, however many items ran (by default only up to ${COMPARE_TOOL_CALL_ITEMS})`,
    )
    .option('--no-tool-calls', 'do not read the journals: compare only what results.jsonl holds')
    .action((dirA: string, dirB: string, flags: CompareFlags) => {
      const comparison = compareRunDirs(dirA, dirB, { toolCalls: flags.toolCalls ?? 'auto' });
      const gates = checkGates(comparison, flags.gate ?? []);
      if (flags.html !== undefined) {
        const file = resolve(flags.html);
        writeHtml(file, comparison, gates);
        if (!flags.json) io.stdout(printable(`troupe: wrote ${file}\n`));
      }
      if (flags.json) writeJson(comparison, gates, io);
      else writeText(comparison, gates, flags.all === true, io);
      setExit(gates.every((gate) => gate.ok) ? EXIT_OK : EXIT_FAILED);
    });
}

/**
 * Prints the JSON a piece at a time (never the whole document at once: see compare-json.ts), and
 * stops when whoever read it has gone.
 */
function writeJson(comparison: RunComparison, gates: readonly GateResult[], io: CliIO): void {
  for (const piece of compareJsonPieces(comparison, gates)) {
    if (io.stdoutClosed?.aborted) return;
    io.stdout(piece);
  }
}

/**
 * Writes the HTML page to `file` a piece at a time (never the whole page at once: see
 * compare-html.ts).
 */
function writeHtml(file: string, comparison: RunComparison, gates: readonly GateResult[]): void {
  const fd = openSync(file, 'w');
  try {
    for (const piece of compareHtmlPieces(comparison, gates)) {
      const bytes = Buffer.from(piece, 'utf8');
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Prints the text a piece at a time, each piece whole lines sanitized on its own (no redaction
 * pattern spans a line end), and stops when whoever read it has gone.
 */
function writeText(comparison: RunComparison, gates: readonly GateResult[], all: boolean, io: CliIO): void {
  for (const piece of compareTextPieces(comparison, gates, { columns: outputColumns(), all })) {
    if (io.stdoutClosed?.aborted) return;
    io.stdout(printable(piece));
  }
}

function collectGate(value: string, previous: readonly Gate[] | undefined): Gate[] {
  try {
    return [...(previous ?? []), parseGate(value)];
  } catch (error) {
    throw new InvalidArgumentError(isTroupeError(error) ? error.message : String(error));
  }
}
