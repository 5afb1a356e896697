/**
 * A stdio MCP server given its token as an option (`args: ['--token', X]`) quotes it when it
 * refuses the option (`bad option: --token X`), and that stderr becomes the agent's warning:
 * `--token X`, with a space, matches no masking pattern, so the value must be known as a secret.
 */
import { describe, expect, it } from 'vitest';
import { REDACTED } from '../../src/journal/constants.ts';
import { redactText } from '../../src/journal/redact.ts';
import { registerServerCredentials } from '../../src/mcp/config.ts';

const SPACED = 'Qm7ArgToken4xWp9Lz';
const JOINED = 'Vt2ArgKey8nRc5Hs1';
const PLAIN = 'not-a-secret-path.txt';

describe('a stdio MCP server credential option', () => {
  it('has its value masked wherever it is quoted, spaced or joined by =', () => {
    registerServerCredentials({
      type: 'stdio',
      command: 'node',
      args: ['server.js', '--token', SPACED, `--api-key=${JOINED}`, '--config', PLAIN],
      env: {},
    });
    expect(redactText(`node: bad option: --token ${SPACED}`)).toBe(`node: bad option: --token ${REDACTED}`);
    expect(redactText(`refused ${JOINED}`)).toBe(`refused ${REDACTED}`);
    expect(redactText(`read ${PLAIN}`)).toBe(`read ${PLAIN}`);
  });

  it('has a private key and a cookie in its environment masked where it quotes them', () => {
    const key = 'Pk4sSigningKey9wQz7';
    const cookie = 'sess4Cookie8Value2x';
    registerServerCredentials({
      type: 'stdio',
      command: 'node',
      args: ['server.js'],
      env: { SIGNING_PRIVATE_KEY: key, SITE_COOKIE: cookie },
    });
    expect(redactText(`cannot load key ${key}`)).toBe(`cannot load key ${REDACTED}`);
    expect(redactText(`sent ${cookie}`)).toBe(`sent ${REDACTED}`);
  });
});
