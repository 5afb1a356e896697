/**
 * `troupe approve [REQUEST_ID]`: lists the tool calls agents on a Redis queue wait on, or decides
 * one, from any machine that reaches the Redis server (the redis backend; a threads run asks in
 * its own terminal). The agent's worker picks the decision up, wherever it runs.
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { RemoteApprovals } from '../engines/redis/remote-approvals.ts';
import type { ApprovalDecision } from '../protocol/approvals.ts';
import { describeRequest } from '../run-dir/approvals.ts';
import { printable, terminalJson } from '../run-dir/format.ts';
import { COMMAND_HELP } from './commands.ts';
import type { CliIO } from './shared/io.ts';

interface ApproveFlags {
  readonly deny?: string | boolean;
  readonly remember?: string;
  readonly redis?: string;
  readonly queue?: string;
  readonly prefix?: string;
  readonly json?: boolean;
}

/** Registers `troupe approve` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('approve')
    .description(COMMAND_HELP.approve.description)
    .argument('[request-id]', 'the request to decide (a unique prefix is enough); omitted: list them')
    .option('--deny [reason]', 'deny it instead; the model sees the reason')
    .option('--remember <scope>', "`session`: approve the rule's later requests too (default: `call`)")
    .option('--redis <url>', 'Redis URL (default: TROUPE_REDIS_URL)')
    .option('--queue <name>', 'queue name (default: troupe-agents)')
    .option('--prefix <prefix>', 'Redis key prefix (default: troupe)')
    .option('--json', 'print JSON')
    .action(async (requestId: string | undefined, flags: ApproveFlags) => {
      const remote = await RemoteApprovals.connect({
        ...(flags.redis === undefined ? {} : { redisUrl: flags.redis }),
        ...(flags.queue === undefined ? {} : { queueName: flags.queue }),
        ...(flags.prefix === undefined ? {} : { prefix: flags.prefix }),
      });
      try {
        if (requestId === undefined) {
          const pending = await remote.pending();
          if (flags.json) io.stdout(`${terminalJson(pending)}\n`);
          else if (pending.length === 0) io.stdout('no tool call is waiting for approval\n');
          else
            for (const request of pending)
              io.stdout(`${request.requestId}  ${printable(describeRequest(request))}\n`);
          return;
        }
        if (flags.remember !== undefined && flags.remember !== 'session' && flags.remember !== 'call') {
          io.stderr(
            `troupe: --remember takes \`call\` or \`session\`, got ${JSON.stringify(flags.remember)}\n`,
          );
          setExit(2);
          return;
        }
        const decider = `troupe approve (${hostname()}:${process.pid})`;
        const denied = flags.deny !== undefined && flags.deny !== false;
        const decision: ApprovalDecision = denied
          ? {
              approved: false,
              by: 'person',
              decider,
              ...(typeof flags.deny === 'string' && flags.deny.trim() !== '' ? { reason: flags.deny } : {}),
            }
          : {
              approved: true,
              by: 'person',
              decider,
              remember: flags.remember === 'session' ? 'session' : 'call',
            };
        const request = await remote.decide(requestId, decision);
        if (flags.json) io.stdout(`${terminalJson({ request, decision })}\n`);
        else
          io.stdout(
            `${denied ? 'denied' : 'approved'} ${request.requestId}: ${printable(describeRequest(request))}\n`,
          );
      } finally {
        await remote.close();
      }
    });
}
