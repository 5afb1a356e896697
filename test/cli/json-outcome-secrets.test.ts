/**
 * `troupe run --json` ends with an Outcome line holding the agent's answer, JSON text escaped a
 * second time in that line: masking only the printed line left a PEM key's body there (its line
 * breaks are `\\n`), while the journal it printed just before held it masked.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';
import { completeTaskResponse, startMockServer } from '../supervisor/mock-openai.ts';

const PEM_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7';
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----`;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-json-outcome-'));
});
afterEach(() => cleanup());

it('troupe run --json masks a private key in the Outcome line', async () => {
  const model = await startMockServer({
    '/v1/chat/completions': (_req, res) => completeTaskResponse(res, { summary: `found:\n${PEM}\n` }),
  });
  try {
    mkdirSync(path.join(dir, '.troupe', 'agents'), { recursive: true });
    writeFileSync(
      path.join(dir, '.troupe', 'agents', 'leaker.md'),
      '---\nname: leaker\ndescription: Repeats what it read.\n---\nAnswer.\n',
    );
    const env = simulatedEnv({ OPENAI_BASE_URL: model.url('/v1'), OPENAI_API_KEY: 'test-key-0123456789' });
    const run = startCli(['run', 'leaker', '--task', 'Find the key.', '--model', 'mock', '--json'], {
      cwd: dir,
      env,
    });
    expect(await run.exited, run.stderr()).toBe(0);
    const lines = run
      .stdout()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { type?: string; answer?: string });
    const outcome = lines.find((line) => line.type === 'Outcome');
    expect(JSON.parse(outcome?.answer ?? 'null')).toEqual({
      summary: 'found:\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\n',
    });
    expect(run.stdout()).not.toContain(PEM_BODY);
  } finally {
    await model.close();
  }
}, 60_000);
