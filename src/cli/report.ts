/** `troupe report RUN_DIR [--html FILE] [--json]`: what a fan-out run did, in the terminal or as one HTML file. */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { terminalJson } from '../run-dir/format.ts';
import { renderHtmlReport } from '../run-dir/html-report.ts';
import { reportText, runSummaryOf } from '../run-dir/report-text.ts';
import { readRunDir } from '../run-dir/run-dir.ts';
import { buildTimeline } from '../run-dir/timeline.ts';
import { COMMAND_HELP } from './commands.ts';
import type { CliIO } from './shared/io.ts';

interface ReportFlags {
  readonly html?: string;
  readonly json?: boolean;
}

/** Registers `troupe report` on `program`. */
export function register(program: Command, io: CliIO, _setExit: (code: number) => void): void {
  program
    .command('report')
    .description(COMMAND_HELP.report.description)
    .argument('<run-dir>', 'run directory (.troupe/runs/<id>)')
    .option('--html <file>', 'write a self-contained HTML report (timeline, token and cost charts, failures)')
    .option('--json', 'print the summary as JSON')
    .action((dir: string, flags: ReportFlags) => {
      const contents = readRunDir(dir);
      const timeline = buildTimeline(contents);
      if (flags.html !== undefined) {
        const file = resolve(flags.html);
        writeFileSync(file, renderHtmlReport(contents, timeline));
        if (!flags.json) io.stdout(`troupe: wrote ${file}\n`);
      }
      if (flags.json) {
        io.stdout(`${terminalJson(runSummaryOf(contents), 2)}\n`);
        return;
      }
      if (flags.html === undefined) io.stdout(reportText(contents, timeline, process.stdout.columns || 120));
    });
}
