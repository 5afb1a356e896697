/**
 * `troupe score RUN_DIR [--plan FILE] [--json]`: scores a run again with its own scorers or with
 * another plan's (see src/run-dir/rescore.ts), then prints each scorer's pass rate and every
 * item's scores.
 */
import type { Command } from 'commander';
import { printable } from '../run-dir/format.ts';
import { formatPlanProblem, planProblemsOf } from '../run-dir/plan-problems.ts';
import { SIMULATED_NOTICE } from '../run-dir/provider-choice.ts';
import { rescoreRunDir } from '../run-dir/rescore.ts';
import { scorerLines, scoringTable } from '../run-dir/scoring-text.ts';
import { fitWidth, tableWidth } from '../run-dir/text-width.ts';
import { COMMAND_HELP } from './commands.ts';
import { EXIT_FAILED, EXIT_OK } from './shared/constants.ts';
import { type CliIO, outputColumns } from './shared/io.ts';

interface ScoreFlags {
  readonly plan?: string;
  readonly json?: boolean;
}

/** Registers `troupe score` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('score')
    .description(COMMAND_HELP.score.description)
    .argument('<run-dir>', 'run directory (.troupe/runs/<id>)')
    .option('--plan <file>', "take the scorers and the items' `expected` values from this plan")
    .option('--json', 'print the scoring summary as JSON')
    .action(async (dir: string, flags: ScoreFlags) => {
      setExit(await score(dir, flags, io));
    });
}

async function score(dir: string, flags: ScoreFlags, io: CliIO): Promise<number> {
  const cwd = process.cwd();
  const controller = new AbortController();
  const onSigint = (): void => controller.abort(new Error('interrupted (Ctrl-C)'));
  process.once('SIGINT', onSigint);
  try {
    const result = await rescoreRunDir(dir, {
      ...(flags.plan === undefined ? {} : { planFile: flags.plan }),
      cwd,
      signal: controller.signal,
    });
    const { unread } = result;
    if (unread.count > 0)
      io.stderr(
        `troupe: kept ${unread.count} line(s) of results.jsonl it could not read as they were, unscored (first: line ${unread.firstLine})\n`,
      );
    if (flags.json) {
      io.stdout(`${JSON.stringify(result.scoring, null, 2)}\n`);
      return EXIT_OK;
    }
    const width = tableWidth(outputColumns());
    const lines = [
      ...scoringTable(result.scoring).map((line) => fitWidth(line, width)),
      '',
      `scored ${result.scored} of ${result.scoring.items.length} plan entries`,
      ...scorerLines(result.scoring),
    ];
    const judged = Object.values(result.scoring.scorers).some((totals) => totals.type === 'judge');
    if (judged && result.summary.simulated) lines.push(`troupe: judges: ${SIMULATED_NOTICE}`);
    io.stdout(printable(`${lines.join('\n')}\n`));
    return EXIT_OK;
  } catch (error) {
    const problems = planProblemsOf(error);
    if (!problems) throw error;
    for (const problem of problems) io.stderr(printable(`${formatPlanProblem(problem, cwd)}\n`));
    io.stderr(`troupe: ${problems.length} problem(s) in the plan; nothing was scored\n`);
    return EXIT_FAILED;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
