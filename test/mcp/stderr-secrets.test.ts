/**
 * An MCP server that fails to start prints why on stderr, and a server's stderr often quotes the
 * credential it was given ("auth failed for token ..."). The tail of that stderr becomes the
 * agent's `mcp_unavailable` warning: the journal and the `agent:warnings` event must carry it
 * masked, both a key of a known shape and the server's own configured token, whatever its shape.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import { redactText } from '../../src/journal/redact.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { scratch } from './helpers.ts';

const SHAPED_KEY = 'sk-test-McpStderr0123456789abcdef';
/** A token no pattern knows: masked only because the server's configuration holds it. */
const SERVER_TOKEN = 'plain-mcp-server-credential-42';
const HEADER_TOKEN = 'another-plain-header-credential-7';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('an MCP server stderr that quotes a credential', () => {
  it('reaches the journal and agent:warnings masked, its configured token included', async () => {
    const { dir, cleanup } = scratch();
    const text =
      '---\nname: mcp-user\ndescription: Uses MCP tools.\ntools: [mcp__bad__echo, mcp__remote__echo, complete_task]\n---\nUse the tools.\n';
    const definition = parseDefinition(text, '/agents/mcp-user.md').definition;
    if (!definition) throw new Error('the definition does not parse');
    const supervisor = new Supervisor({
      threads: 1,
      definitions: [definition],
      mcpServers: {
        bad: {
          type: 'stdio',
          command: process.execPath,
          args: [
            '-e',
            `console.error("auth failed: OPENAI_API_KEY=${SHAPED_KEY}, token", process.env.SERVICE_TOKEN); process.exit(1)`,
          ],
          env: { SERVICE_TOKEN: SERVER_TOKEN },
        },
        // Nothing listens there: its header's value is registered all the same, where it is read.
        remote: {
          type: 'http',
          url: 'http://127.0.0.1:9/mcp',
          headers: { Authorization: `Bearer ${HEADER_TOKEN}` },
        },
      },
      mcpProjectFile: false,
      journalDir: path.join(dir, 'journals'),
      cwd: dir,
    });
    cleanups.push(cleanup, () => supervisor.close());
    const warnings: string[] = [];
    supervisor.on('agent:warnings', (event) => warnings.push(JSON.stringify(event.warnings)));
    const handle = supervisor.spawn('mcp-user', {
      task: `Echo hello. Keep ${HEADER_TOKEN} and ${SERVER_TOKEN} to yourself.`,
    });
    expect((await handle.result).status).toBe('completed');
    await supervisor.close();

    // The supervisor's thread, which writes run directories, events and terminal output, masks the
    // servers' credentials too (a model can quote them in a result).
    expect(redactText(`${SERVER_TOKEN} / Bearer ${HEADER_TOKEN}`)).toBe('[REDACTED] / [REDACTED]');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('OPENAI_API_KEY=[REDACTED]');
    expect(warnings[0]).toContain('mcp_unavailable');
    const journal = readFileSync(path.join(dir, 'journals', `${handle.id}.jsonl`), 'utf8');
    expect(journal).toContain('mcp_unavailable');
    for (const [where, textOf] of [
      ['agent:warnings', warnings.join('\n')],
      ['journal', journal],
    ] as const) {
      for (const secret of [SHAPED_KEY, SERVER_TOKEN, HEADER_TOKEN]) {
        expect([where, secret, textOf.includes(secret)]).toEqual([where, secret, false]);
      }
    }
  }, 60_000);
});
