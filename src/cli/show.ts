/**
 * `troupe show RUN_DIR AGENT [--full] [--inputs] [--json] [--max-line-bytes N]` (or `troupe show
 * JOURNAL`): one agent's transcript in the terminal: every model request, tool call with arguments
 * and result, state change, wait, restart and the outcome. Its journal is read a line at a time,
 * each line bounded (`journal_line_too_long`, naming the file, the line and the bound).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { UserError } from '../errors.ts';
import { MAX_JOURNAL_LINE_BYTES } from '../journal/constants.ts';
import { redactValue } from '../journal/redact.ts';
import { shortId, terminalJson } from '../run-dir/format.ts';
import { displayPath } from '../run-dir/plan-problems.ts';
import { journalFile, readRunDir } from '../run-dir/run-dir.ts';
import { type AgentRef, buildTimeline, type ReportAgent } from '../run-dir/timeline.ts';
import { findAgent, transcriptText } from '../run-dir/transcript-text.ts';
import { COMMAND_HELP } from './commands.ts';
import { positiveInteger } from './shared/integer-flag.ts';
import type { CliIO } from './shared/io.ts';
import { damageWarnings, isJournalFile, readJournalTimeline } from './shared/report-source.ts';

interface ShowFlags {
  readonly full?: boolean;
  readonly inputs?: boolean;
  readonly json?: boolean;
  readonly maxLineBytes?: number;
}

/** Registers `troupe show` on `program`. */
export function register(program: Command, io: CliIO, _setExit: (code: number) => void): void {
  program
    .command('show')
    .description(COMMAND_HELP.show.description)
    .argument('<run-dir|journal>', 'run directory (.troupe/runs/<id>) or one agent journal (.jsonl)')
    .argument('[agent]', 'agent id, a unique prefix of one, a plan index or a plan id (with a run directory)')
    .option('--full', 'print every text whole instead of its first lines')
    .option('--inputs', "print each round's input as the model got it")
    .option('--json', 'print the transcript as JSON')
    .option(
      '--max-line-bytes <n>',
      `bytes one journal line may hold; a longer one is an error naming it (default ${MAX_JOURNAL_LINE_BYTES})`,
      positiveInteger,
    )
    .action((target: string, query: string | undefined, flags: ShowFlags) => {
      const inputs = flags.inputs === true || flags.json === true;
      const bound = flags.maxLineBytes === undefined ? {} : { maxLineBytes: flags.maxLineBytes };
      let agent: ReportAgent | undefined;
      let journal = target;
      if (isJournalFile(target)) {
        agent = readJournalTimeline(resolve(target), { inputs, ...bound }).agents[0];
      } else {
        const contents = readRunDir(target);
        // Only the agent shown is built: its journal is read, no other agent's.
        const select = (agents: readonly AgentRef[]): string => {
          if (query === undefined) {
            throw new UserError(
              'missing_agent',
              `Expected an agent to show after the run directory, found none; it has ${agents.length}: ${agents
                .slice(0, 8)
                .map((a) => `${shortId(a.agentId)}${a.label === undefined ? '' : ` (${a.label})`}`)
                .join(', ')}${agents.length > 8 ? ', ...' : ''}`,
              { runDir: contents.paths.root },
            );
          }
          const found = findAgent(agents, query);
          if (Array.isArray(found)) {
            throw new UserError(
              found.length === 0 ? 'unknown_agent' : 'ambiguous_agent',
              found.length === 0
                ? `Expected an agent id, a unique prefix of one, a plan index or a plan id, got \`${query}\`, which names none of the ${agents.length} agents of ${contents.paths.root}`
                : `Expected \`${query}\` to name one agent, found ${found.length}: ${found.map((a) => a.agentId).join(', ')}`,
              { runDir: contents.paths.root, agent: query },
            );
          }
          return found.agentId;
        };
        const found = buildTimeline(contents, { inputs, wholeTasks: true, select, ...bound }).agents[0];
        if (found === undefined) throw new UserError('unknown_agent', `No agent in ${target}`, { target });
        agent = found;
        journal = displayPath(journalFile(contents.paths, found.agentId), process.cwd());
      }
      if (agent === undefined) throw new UserError('unknown_agent', `No agent in ${target}`, { target });
      if (agent.damage !== undefined) {
        io.stderr(damageWarnings([{ agentId: agent.agentId, journal, damage: agent.damage }]));
      }
      if (flags.json) {
        const { transcript, ...rest } = agent;
        io.stdout(`${terminalJson(redactValue({ ...rest, transcript }), 2)}\n`);
        return;
      }
      io.stdout(transcriptText(agent, { full: flags.full === true, inputs: flags.inputs === true }));
    });
}
