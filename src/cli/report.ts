/**
 * `troupe report RUN_DIR|JOURNAL [--html FILE] [--json]`: what a fan-out run (or one agent's
 * journal) did, in the terminal or as one self-contained HTML file with every agent's transcript.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { REPORT_TIMELINE_MAX_AGENTS } from '../run-dir/constants.ts';
import { terminalJson } from '../run-dir/format.ts';
import { journalPage, renderHtmlReport, runPage } from '../run-dir/html-report.ts';
import { displayPath } from '../run-dir/plan-problems.ts';
import { journalReportText, runSummaryOf, writeReportText } from '../run-dir/report-text.ts';
import { journalFile, readRunDirForReport } from '../run-dir/run-dir.ts';
import { buildTimeline, damagedJournals } from '../run-dir/timeline.ts';
import { COMMAND_HELP } from './commands.ts';
import { type CliIO, outputColumns } from './shared/io.ts';
import {
  agentSummaryJson,
  damageWarnings,
  isJournalFile,
  readJournalTimeline,
} from './shared/report-source.ts';

interface ReportFlags {
  readonly html?: string;
  readonly json?: boolean;
}

/** Registers `troupe report` on `program`. */
export function register(program: Command, io: CliIO, _setExit: (code: number) => void): void {
  program
    .command('report')
    .description(COMMAND_HELP.report.description)
    .argument('<run-dir|journal>', 'run directory (.troupe/runs/<id>) or one agent journal (.jsonl)')
    .option(
      '--html <file>',
      "write a self-contained HTML report (timeline, charts, failures, every agent's transcript)",
    )
    .option('--json', 'print the summary as JSON')
    .action((target: string, flags: ReportFlags) => {
      const html = flags.html === undefined ? undefined : resolve(flags.html);
      if (isJournalFile(target)) {
        const file = resolve(target);
        const timeline = readJournalTimeline(file, { inputs: html !== undefined });
        const damaged = damagedJournals(timeline, () => target);
        io.stderr(damageWarnings(damaged));
        if (html !== undefined) {
          writeFileSync(html, renderHtmlReport({ ...journalPage(file, timeline), damaged }, timeline));
          if (!flags.json) io.stdout(`troupe: wrote ${html}\n`);
        }
        if (flags.json) io.stdout(`${terminalJson(agentSummaryJson(timeline), 2)}\n`);
        else if (html === undefined) io.stdout(journalReportText(file, timeline, outputColumns()));
        return;
      }
      const contents = readRunDirForReport(target);
      // Spans only for the agents the HTML timeline draws: 100,000 agents' were built for its first 400.
      const timeline = buildTimeline(contents, {
        inputs: html !== undefined,
        spans: html === undefined ? false : REPORT_TIMELINE_MAX_AGENTS,
      });
      const damaged = damagedJournals(timeline, (agentId) =>
        displayPath(journalFile(contents.paths, agentId), process.cwd()),
      );
      // The report is still produced (and the exit code unchanged): it shows what could be read.
      io.stderr(damageWarnings(damaged));
      if (html !== undefined) {
        writeFileSync(html, renderHtmlReport({ ...runPage(contents, timeline), damaged }, timeline));
        if (!flags.json) io.stdout(`troupe: wrote ${html}\n`);
      }
      if (flags.json) {
        const summary = runSummaryOf(contents, timeline);
        // Plan entries that started and have not ended (still running, or cut off by a kill).
        const unended = summary.counts.interrupted;
        io.stdout(
          `${terminalJson(
            {
              ...summary,
              ...(unended === 0 ? {} : { unended }),
              ...(damaged.length === 0 ? {} : { damagedJournals: damaged }),
            },
            2,
          )}\n`,
        );
        return;
      }
      // Written as built, a chunk of whole lines at a time, not held as one string (100,000 rows).
      if (html === undefined) writeReportText(contents, timeline, io.stdout, outputColumns());
    });
}
