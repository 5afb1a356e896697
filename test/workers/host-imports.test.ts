/**
 * What an actor-host thread loads decides how long it takes to start (every Supervisor starts
 * `threads` of them; a thread that dies is replaced by a new one). Dependencies only some agents
 * need are imported where they are used: a thread whose agents have no MCP server, fetch no web
 * page and run on a server that reports usage never loads the MCP SDK (with zod, ~155 modules),
 * turndown or gpt-tokenizer's BPE tables; one whose agents use no block versions, path rules, glob
 * or grep loads no semver, picomatch or re2js.
 */
import path from 'node:path';
import { expect, it } from 'vitest';
import { repoRoot, runScript } from '../run-dir/helpers.ts';

it('an actor host and an agent that reads a file and completes load no MCP SDK, zod, turndown, BPE table, semver, picomatch or re2js', async () => {
  const fixtures = path.join(repoRoot, 'test/fixtures/workers');
  const { code, stdout, stderr } = await runScript(path.join(fixtures, 'host-imports.ts'), {
    cwd: repoRoot,
    imports: [path.join(fixtures, 'record-loads.mjs')],
  });
  expect(code, stderr).toBe(0);
  const { status, required } = JSON.parse(stdout) as { status: string; required: string[] };
  expect(status).toBe('completed');
  const loaded = [...stderr.matchAll(/^LOADED (\S+)$/gm)].map((match) => match[1] ?? '');
  // The recording works: the host (through tsx, or its cached bundle: workers/dev-bundle.mjs) and
  // the loop were loaded through it.
  expect(
    loaded.some((url) => /\/workers\/actor-host\.ts$|\/troupe-dev\/.+\/actor-host\.mjs$/.test(url)),
  ).toBe(true);
  expect(loaded.some((url) => url.endsWith('/src/loop/run-agent.ts'))).toBe(true);
  const packages = new Set(
    loaded.flatMap((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1] ?? []),
  );
  for (const lazy of ['@modelcontextprotocol/sdk', 'zod', 'zod-to-json-schema', 'turndown']) {
    expect(packages, lazy).not.toContain(lazy);
  }
  // The recording of require() works (ajv is CommonJS); gpt-tokenizer's tables were not required.
  expect(required.some((file) => file.includes('/node_modules/ajv/'))).toBe(true);
  expect(required.filter((file) => /gpt-tokenizer\/.*bpeRanks/.test(file))).toEqual([]);
  // Block versions, path rules, glob and grep load their packages on first use
  // (src/require-package.ts): an agent that uses none of them loads none of them.
  for (const lazy of ['semver', 'picomatch', 're2js']) {
    expect(packages, lazy).not.toContain(lazy);
    expect(
      required.filter((file) => file.includes(`/node_modules/${lazy}/`)),
      lazy,
    ).toEqual([]);
  }
});
