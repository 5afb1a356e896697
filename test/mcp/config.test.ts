// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${VAR}` is the MCP configuration syntax under test, not a mistaken JS placeholder.
/**
 * `.mcp.json` as editors and other MCP clients write it, and `${VAR}` expansion as a shell does it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McpServers } from '../../src/mcp/config.ts';
import {
  expandMcpServerConfig,
  loadProjectMcpFile,
  type McpStdioServer,
  mcpServersOption,
} from '../../src/mcp/config.ts';
import { MCP_CONFIG_BYTE_LIMIT, MCP_MAX_MESSAGE_BYTES_CEILING } from '../../src/mcp/constants.ts';
import { runMcpServers } from '../../src/supervisor/definitions.ts';
import { runScripted } from '../loop/helpers.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-mcp-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const SERVER = { mcpServers: { files: { command: 'node', args: ['server.mjs'] } } };

describe('.mcp.json', () => {
  it('is read with a byte order mark in front, as some editors save it', async () => {
    writeFileSync(path.join(dir, '.mcp.json'), `\uFEFF${JSON.stringify(SERVER)}`);
    const read = await loadProjectMcpFile(dir);
    expect(read.problems).toEqual([]);
    expect(read.servers.files).toMatchObject({ type: 'stdio', command: 'node', args: ['server.mjs'] });
  });

  it('longer than the bound is a problem naming the bound, read no further than one byte past it', async () => {
    const big = JSON.stringify({ ...SERVER, padding: 'x'.repeat(MCP_CONFIG_BYTE_LIMIT) });
    writeFileSync(path.join(dir, '.mcp.json'), big);
    const read = await loadProjectMcpFile(dir);
    expect(read).toEqual({
      file: path.join(dir, '.mcp.json'),
      servers: {},
      problems: [
        { message: `Expected a file of at most ${MCP_CONFIG_BYTE_LIMIT} bytes, found more`, path: [] },
      ],
    });
  });

  it('that is not JSON is reported at its line and column, with the file named once', async () => {
    writeFileSync(path.join(dir, '.mcp.json'), '{\n  "mcpServers": {\n    files: {}\n  }\n}\n');
    const read = await loadProjectMcpFile(dir);
    expect(read.problems).toHaveLength(1);
    expect(read.problems[0]?.message).toMatch(/^Expected JSON: .+ at line 3, column 5$/);
    expect(read.problems[0]?.message).not.toContain(dir);
    await expect(runMcpServers({ cwd: dir, mcpServers: {}, mcpProjectFile: true })).rejects.toMatchObject({
      code: 'invalid_mcp_config',
      message: expect.stringMatching(/\.mcp\.json: Expected JSON: .+ at line 3, column 5$/),
    });
  });

  it('reads past the keys other MCP clients write, leaves a disabled server out, and still refuses a typo', async () => {
    writeFileSync(
      path.join(dir, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          files: { command: 'node', args: [], timeout: 5000, autoApprove: ['read'], description: 'files' },
          off: { command: 'node', args: [], disabled: true },
          on: { command: 'node', args: [], disabled: false, alwaysAllow: [] },
        },
      }),
    );
    const read = await loadProjectMcpFile(dir);
    expect(read.problems).toEqual([]);
    expect(Object.keys(read.servers)).toEqual(['files', 'on']);
    writeFileSync(
      path.join(dir, '.mcp.json'),
      JSON.stringify({ mcpServers: { files: { command: 'node', arg: [] } } }),
    );
    expect((await loadProjectMcpFile(dir)).problems[0]).toMatchObject({
      message: expect.stringContaining('Unknown key `arg`'),
      path: ['mcpServers', 'files', 'arg'],
    });
  });

  it('names a server whose name is not an identifier unambiguously', async () => {
    writeFileSync(
      path.join(dir, '.mcp.json'),
      JSON.stringify({ mcpServers: { 'my.server': { command: 'node', args: [] } } }),
    );
    await expect(runMcpServers({ cwd: dir, mcpServers: {}, mcpProjectFile: true })).rejects.toMatchObject({
      code: 'invalid_mcp_config',
      message: expect.stringContaining('(mcpServers["my.server"])'),
    });
  });
});

describe('${VAR} expansion', () => {
  const server = (args: string[]): McpStdioServer => ({ type: 'stdio', command: 'node', args, env: {} });
  const expand = (args: string[], env: Record<string, string | undefined>) => {
    const { config, missing } = expandMcpServerConfig(server(args), env);
    return { args: (config as McpStdioServer).args, missing };
  };

  it('${VAR} is the value, empty included; only an unset variable is missing', () => {
    expect(expand(['stdio${SUFFIX}'], { SUFFIX: '' })).toEqual({ args: ['stdio'], missing: [] });
    expect(expand(['stdio${SUFFIX}'], { SUFFIX: '-x' })).toEqual({ args: ['stdio-x'], missing: [] });
    expect(expand(['stdio${SUFFIX}'], {})).toEqual({ args: ['stdio'], missing: ['SUFFIX'] });
  });

  it('${VAR:-default} is the default when the variable is unset or empty', () => {
    expect(expand(['${PORT:-8080}'], {})).toEqual({ args: ['8080'], missing: [] });
    expect(expand(['${PORT:-8080}'], { PORT: '' })).toEqual({ args: ['8080'], missing: [] });
    expect(expand(['${PORT:-8080}'], { PORT: '9' })).toEqual({ args: ['9'], missing: [] });
  });
});

describe("maxMessageBytes in a server's settings", () => {
  it('is kept for stdio and HTTP servers, and refused when not an integer within the ceiling', () => {
    expect(
      mcpServersOption({
        files: { command: 'node', maxMessageBytes: 1024 },
        docs: { url: 'https://example.com/mcp', maxMessageBytes: 2048 },
      }),
    ).toEqual({
      files: { type: 'stdio', command: 'node', args: [], env: {}, maxMessageBytes: 1024 },
      docs: { type: 'http', url: 'https://example.com/mcp', headers: {}, maxMessageBytes: 2048 },
    });
    for (const bad of [0, 1.5, '1024', MCP_MAX_MESSAGE_BYTES_CEILING + 1]) {
      expect(() => mcpServersOption({ files: { command: 'node', maxMessageBytes: bad } })).toThrow(
        expect.objectContaining({
          code: 'invalid_option',
          message: expect.stringContaining(
            `Expected \`maxMessageBytes\` to be an integer from 1 to ${MCP_MAX_MESSAGE_BYTES_CEILING}`,
          ),
          fields: { option: 'mcpServers.files.maxMessageBytes' },
        }),
      );
    }
  });
});

describe('mcpServers given in code', () => {
  it('reads a .mcp.json-style entry (no type, no env) as runAgent and the Supervisor do', async () => {
    const read = mcpServersOption({ files: { command: 'node', args: ['server.mjs'] } });
    expect(read).toEqual({ files: { type: 'stdio', command: 'node', args: ['server.mjs'], env: {} } });
    expect(mcpServersOption(read)).toEqual(read);
    expect(() => mcpServersOption({ files: { command: 5 } })).toThrow(
      expect.objectContaining({ code: 'invalid_option', fields: { option: 'mcpServers.files.command' } }),
    );
    // runAgent: the server cannot start (no such command), and the warning says so, not
    // "Cannot read properties of undefined (reading 'replaceAll')".
    const { events } = await runScripted([{ text: 'done' }], {
      run: {
        mcpServers: { files: { command: '/nonexistent/troupe-mcp', args: [] } } as unknown as McpServers,
      },
    });
    const started = events[0];
    const warnings = started?.type === 'Started' ? (started.warnings ?? []) : [];
    expect(warnings).toMatchObject([{ code: 'mcp_unavailable' }]);
    expect(JSON.stringify(warnings)).not.toContain('replaceAll');
  });
});
