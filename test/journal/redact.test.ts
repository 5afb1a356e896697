import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/journal/canonical-json.ts';
import { REDACTED } from '../../src/journal/constants.ts';
import { hashInput } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { JOURNAL_MASKING, redactEvent, redactText } from '../../src/journal/redact.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { AGENT_ID, FakeAgent, rerender, TOOL_SPECS } from './helpers.ts';

const OPENAI_KEY = 'sk-proj-Zx81kLq0aB3cD4eF5gH6iJ7k';
const ANTHROPIC_KEY = 'sk-ant-api03-Qw9Er8Ty7Ui6Op5As4Df3Gh2';
const OPAQUE_SECRET = 'hunter2-correct-horse';

describe('redactText', () => {
  it.each([
    ['a bearer header', `Authorization: Bearer ${OPENAI_KEY}`, 'Authorization: Bearer [REDACTED]'],
    [
      'a short bearer token after an auth header',
      'Authorization: Bearer abc',
      'Authorization: Bearer [REDACTED]',
    ],
    ['an x-api-key header', `x-api-key: ${ANTHROPIC_KEY}`, 'x-api-key: [REDACTED]'],
    ['an env assignment', `OPENAI_API_KEY=${OPENAI_KEY}\nDEBUG=1`, 'OPENAI_API_KEY=[REDACTED]\nDEBUG=1'],
    ['a JSON member', `{"apiKey":"${OPAQUE_SECRET}","maxTokens":5}`, '{"apiKey":"[REDACTED]","maxTokens":5}'],
    ['a Python dict member', `{'client_secret': '${OPAQUE_SECRET}'}`, "{'client_secret': '[REDACTED]'}"],
    [
      'a query parameter inside a URL',
      'url: https://x.test/v1?api_key=abc123&q=1',
      'url: https://x.test/v1?api_key=[REDACTED]&q=1',
    ],
    ['a bare key anywhere', `the key is ${ANTHROPIC_KEY}.`, 'the key is [REDACTED].'],
    ['a GitHub token', 'ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345', REDACTED],
    ['an AWS access key id', 'AKIAIOSFODNN7EXAMPLE', REDACTED],
    ['a GitLab token', 'glpat-AbCdEfGhIjKlMnOpQrSt', REDACTED],
    ['a Stripe key', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc', REDACTED],
    ['a Hugging Face token', 'hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456', REDACTED],
    ['an npm token', 'npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789', REDACTED],
    [
      'a JWT',
      'auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N',
      `auth ${REDACTED}`,
    ],
    [
      'a password in a database URL',
      'DATABASE_URL is postgres://app:S3cr3t-pw@db.internal:5432/app',
      'DATABASE_URL is postgres://app:[REDACTED]@db.internal:5432/app',
    ],
    [
      'a password holding an @, up to the last @ before the host',
      'clone https://bot:p@ss-w0rd@git.example.com/x.git (mail a@b.com)',
      'clone https://bot:[REDACTED]@git.example.com/x.git (mail a@b.com)',
    ],
    [
      'a password with no user name',
      'connect to redis://:hunter2@cache:6379/0',
      'connect to redis://:[REDACTED]@cache:6379/0',
    ],
    [
      'a PEM private key, body and headers',
      '-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nMIIEowIBAAKCAQEA7bq0\nZm9vYmFy==\n-----END RSA PRIVATE KEY-----\nafter',
      '-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\nafter',
    ],
    [
      'a PEM private key cut off before its END line',
      'key:\n-----BEGIN PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq0\nZm9v',
      'key:\n-----BEGIN PRIVATE KEY-----\n[REDACTED]',
    ],
    [
      'a PEM private key inside a JSON string',
      '{"pem":"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBYr\\nAwEHoUQDQgAE\\n-----END EC PRIVATE KEY-----\\n"}',
      '{"pem":"-----BEGIN EC PRIVATE KEY-----\\n[REDACTED]\\n-----END EC PRIVATE KEY-----\\n"}',
    ],
    [
      'a Cookie header, every pair',
      'Cookie: session=abcdef0123456789; theme=dark',
      'Cookie: session=[REDACTED]; theme=[REDACTED]',
    ],
    [
      'a Set-Cookie value up to its first ;',
      'Set-Cookie: sid=s%3Aabc123def456; Path=/; HttpOnly',
      'Set-Cookie: sid=[REDACTED]; Path=/; HttpOnly',
    ],
    ['a Cookie header in a JSON member', '{"Cookie":"a=b; c=d"}', '{"Cookie":"[REDACTED]"}'],
    [
      'session ids under session keys',
      'session_id=9f86d081884c7d65 sessionId: 3f2a1b7c-1d2e-4f5a connect.sid=s%3AxYz0123456789',
      'session_id=[REDACTED] sessionId: [REDACTED] connect.sid=[REDACTED]',
    ],
    [
      'a sid and a PHP session id',
      'sid=abc123def456 PHPSESSID=el4ukv0kqbvoirg7nkp4dncpk3',
      'sid=[REDACTED] PHPSESSID=[REDACTED]',
    ],
    ['a session id in a JSON member', '{"session":"0a1b2c3d4e5f6a7b"}', '{"session":"[REDACTED]"}'],
    ['a private key that is no PEM block', 'private_key: abcdef0123456789XYZ', 'private_key: [REDACTED]'],
    [
      'a PEM private key after a private_key key: its lines stay',
      'private_key=-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----',
      'private_key=-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----',
    ],
    ['a client secret', 'client_secret=xyz789abc', 'client_secret=[REDACTED]'],
  ])('masks %s', (_name, input, expected) => {
    expect(redactText(input)).toBe(expected);
  });

  it.each([
    'Bearer tokens are issued by the server; Basic authentication is older.',
    'risk-assessment with sk-learn',
    'max_tokens: 10, maxTokens=5, tokenizer: o200k',
    'troupe: missing_api_key: The openai provider needs an API key: set OPENAI_API_KEY',
    'invalid_token: Expired credentials',
    '{"inputTokens": 4000, "name": "x"}',
    'clone ssh://git@github.com/x/y and https://example.com:8443/path?q=1',
    '-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----',
    // A stack frame of a file named for tokens: its position is where a thread was stuck.
    '#load (file:///app/src/projection/token-counter.ts:139:20)',
    'at readSecret (/app/lib/secret-store.js:12:5)',
    // Session words in prose, and session values that are no id.
    'the session ended; session: started, Session: 3, session_count=12',
    'Session: 2024-01-01T10:00:00Z',
    'cookie: chocolate chip, the cookies=3',
    'inside: side=left',
  ])('leaves ordinary text alone: %s', (text) => {
    expect(redactText(text)).toBe(text);
  });

  const pieces = fc.constantFrom(
    'Bearer ',
    'Basic ',
    'Authorization',
    'api_key',
    'token',
    'secret',
    '"apiKey"',
    "'",
    '"',
    ':',
    '=',
    ' ',
    '\n',
    '&',
    ',',
    'sk-',
    'abcdefghij',
    '0123456789',
    REDACTED,
    'x',
    '://',
    '@',
    'u:p@',
    '-----BEGIN RSA PRIVATE KEY-----',
    '-----END RSA PRIVATE KEY-----',
    'MIIEow==',
    '\\n',
    'Cookie: ',
    'Set-Cookie: ',
    'session_id=',
    'sid',
    ';',
  );
  const texts = fc.array(fc.oneof(pieces, fc.string()), { maxLength: 30 }).map((parts) => parts.join(''));

  it('masks a short text (screened before the line cache) exactly as within a long one', () => {
    // A first line past the screened length sends the whole text through every pattern; no pattern
    // crosses a line break, so its second line must come out as the short text does alone.
    const long = `${'.'.repeat(300)}\n`;
    fc.assert(
      fc.property(texts, (text) => {
        expect(`${long}${redactText(text)}`).toBe(redactText(`${long}${text}`));
      }),
      { numRuns: 2000 },
    );
  });

  it('is idempotent on arbitrary text, so a re-render from the journal hashes like the original', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const once = redactText(text);
        expect(redactText(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves the JSON of masked texts valid and whole, as the CLI prints it (show --json, fanout --json)', () => {
    // Everything the CLI prints passes redactText again, JSON lines included: a masked value
    // followed by an escaped quote or line break must not swallow the escape.
    for (const text of [
      'He said "password=hunter2" twice',
      `secret: ${OPENAI_KEY}\nsecret: ${ANTHROPIC_KEY}\nnext line`,
      `Authorization: Bearer ${OPENAI_KEY}\npostgres://app:pw@db/x`,
    ]) {
      const line = JSON.stringify({ text: redactText(text) });
      expect(redactText(line)).toBe(line);
      expect(JSON.parse(redactText(JSON.stringify({ answer: line })))).toEqual({ answer: line });
    }
    // Any text: the printed line stays valid JSON and keeps every line of the text. It may mask a
    // little more than the text alone (an escape's letter can read as a URL scheme: `\n://u:p@`),
    // never less, and never a line away.
    fc.assert(
      fc.property(texts, (text) => {
        const masked = redactText(text);
        const printed = JSON.parse(redactText(JSON.stringify({ text: masked }))) as { text: string };
        expect(printed.text.split('\n')).toHaveLength(masked.split('\n').length);
      }),
      { numRuns: 2000, seed: -1043010904 },
    );
  });

  it('masks a secret member of JSON text held in a JSON string (a result answer holding JSON)', () => {
    // complete_task's answer is the JSON text of the result: a member that holds JSON text (a
    // config the agent read) is escaped there, and the answer was journalled with the key in it.
    const result = {
      config: JSON.stringify({ apiKey: OPAQUE_SECRET, retries: 3 }),
      env: `PASSWORD="${OPAQUE_SECRET} two"`,
      nested: JSON.stringify({ inner: JSON.stringify({ client_secret: OPAQUE_SECRET }) }),
    };
    const answer = redactText(JSON.stringify(result));
    expect(answer).not.toContain(OPAQUE_SECRET);
    expect(JSON.parse(answer)).toEqual({
      config: '{"apiKey":"[REDACTED]","retries":3}',
      env: 'PASSWORD="[REDACTED]"',
      nested: JSON.stringify({ inner: '{"client_secret":"[REDACTED]"}' }),
    });
    expect(redactText(answer)).toBe(answer);
    // A member that is not a secret keeps its value, and the escaped JSON inside it is still seen.
    const wrapped = JSON.stringify({ answer: JSON.stringify({ token: OPAQUE_SECRET, note: 'a "b" c' }) });
    expect(JSON.parse(redactText(wrapped))).toEqual({
      answer: JSON.stringify({ token: REDACTED, note: 'a "b" c' }),
    });
  });

  it('masks sections joined by a blank line exactly as it masks each section alone', () => {
    fc.assert(
      fc.property(texts, texts, (first, second) => {
        expect(redactText(`${first}\n\n${second}`)).toBe(`${redactText(first)}\n\n${redactText(second)}`);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('redactEvent', () => {
  it('masks every string under a secret-named key in args and metadata, however deep', () => {
    const body = redactEvent({
      type: 'ToolCall',
      args: {
        headers: { Authorization: 'xyz' },
        auth: { token: { value: 'abc', nested: ['d'] } },
        maxTokens: 5,
      },
      metadata: { apiKey: OPAQUE_SECRET, owner: 'ana' },
    });
    expect(body).toEqual({
      type: 'ToolCall',
      args: {
        headers: { Authorization: REDACTED },
        auth: { token: { value: REDACTED, nested: [REDACTED] } },
        maxTokens: 5,
      },
      metadata: { apiKey: REDACTED, owner: 'ana' },
    });
  });

  it('masks cookie headers and private keys held in objects by key, not session ids', () => {
    const body = redactEvent({
      type: 'ToolCall',
      args: { headers: { Cookie: 'a=b', 'set-cookie': ['x=y'] }, private_key: 'k', sessionId: 'run-7' },
    });
    expect(body).toEqual({
      type: 'ToolCall',
      args: {
        headers: { Cookie: REDACTED, 'set-cookie': [REDACTED] },
        private_key: REDACTED,
        sessionId: 'run-7',
      },
    });
  });

  it('keeps tool schemas whole: only their strings are checked, not their keys', () => {
    const body = redactEvent({
      toolSpecs: [{ name: 'login', parameters: { properties: { apiKey: { type: 'string' } } } }],
    });
    expect(body).toEqual({
      toolSpecs: [{ name: 'login', parameters: { properties: { apiKey: { type: 'string' } } } }],
    });
  });
});

describe('JOURNAL_MASKING', () => {
  const secretish = fc.constantFrom(
    OPENAI_KEY,
    `Bearer ${ANTHROPIC_KEY}`,
    `{"apiKey":"${OPAQUE_SECRET}"}`,
    'token: abc123',
    'plain words',
  );
  const leaf = fc.oneof(fc.string(), secretish, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
  const key = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.constantFrom('apiKey', 'token', 'maxTokens', 'password', '10', '9'),
  );
  const tree = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      leaf,
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(key, tie('node'), { maxKeys: 4 }),
    ),
  })).node;
  const body = fc.record({
    type: fc.constant('ToolCall'),
    agentId: fc.string(),
    args: tree,
    metadata: tree,
    error: tree,
    text: fc.oneof(fc.string(), secretish),
    toolSpecs: tree,
  });

  it('serializes exactly the canonical JSON of the redacted copy, in one pass', () => {
    fc.assert(
      fc.property(body, (input) => {
        expect(canonicalJson(input, JOURNAL_MASKING)).toBe(canonicalJson(redactEvent(input)));
      }),
      { numRuns: 500 },
    );
  });

  it('masks long texts every time they are written, under a secret key or not', () => {
    // Long texts' masked JSON is reused between events (every Started repeats the system prompt).
    const prompt = `${'Be brief. '.repeat(40)}\nThe key is ${OPENAI_KEY}.`;
    const event = { type: 'x', systemPrompt: prompt, args: { password: prompt } };
    const expected = `{"args":{"password":"${REDACTED}"},"systemPrompt":${JSON.stringify(redactText(prompt))},"type":"x"}`;
    expect(expected).not.toContain(OPENAI_KEY);
    expect(canonicalJson(event, JOURNAL_MASKING)).toBe(expected);
    expect(canonicalJson(event, JOURNAL_MASKING)).toBe(expected);
    expect(canonicalJson({ ...event, args: { note: prompt } }, JOURNAL_MASKING)).toBe(
      expected.replace(`"password":"${REDACTED}"`, `"note":${JSON.stringify(redactText(prompt))}`),
    );
    // Without masking the text is written as it is.
    expect(canonicalJson({ systemPrompt: prompt })).toBe(`{"systemPrompt":${JSON.stringify(prompt)}}`);
  });

  it('writes the chain fields unmasked', () => {
    const text = canonicalJson({ type: 'x', ts: `sk-${'a'.repeat(20)}`, prev: 'p', seq: 1 }, JOURNAL_MASKING);
    expect(text).toBe(`{"prev":"p","seq":1,"ts":"sk-${'a'.repeat(20)}","type":"x"}`);
  });
});

describe('secrets never reach a journal file', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('metadata apiKey, a Bearer key in tool args, and keys in tool output are absent from the bytes', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
    dirs.push(dir);
    const file = path.join(dir, 'agent.jsonl');
    const writer = JournalWriter.open(file);
    const agent = new FakeAgent(writer)
      .start({ metadata: { apiKey: OPAQUE_SECRET, providerOptions: { 'x-api-key': ANTHROPIC_KEY } } })
      .submit(1)
      .call(1, 'c1', 'http_get', {
        url: 'https://api.test',
        headers: { Authorization: `Bearer ${OPENAI_KEY}` },
      })
      .result(
        1,
        'c1',
        'http_get',
        `echo: {"headers": {"x-api-key": "${ANTHROPIC_KEY}"}} OPENAI_API_KEY=${OPENAI_KEY}`,
      )
      .submit(2);
    writer.append({
      type: 'Failed',
      agentId: AGENT_ID,
      reason: 'provider_error',
      error: {
        name: 'ProviderError',
        code: 'unauthorized',
        message: `401 for key ${OPENAI_KEY}`,
        fields: { apiKey: OPAQUE_SECRET },
      },
      usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: 0,
      rounds: 2,
    });
    writer.close();

    const bytes = readFileSync(file, 'utf8');
    for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, OPAQUE_SECRET, 'Zx81kLq0', 'Qw9Er8Ty']) {
      expect(bytes).not.toContain(secret);
    }
    expect(bytes).toContain(REDACTED);
    expect(bytes.trimEnd().split('\n')).toHaveLength(agent.events.length + 1);
  });

  it('a journal whose inputs held secrets still verifies against a re-render from its redacted events', () => {
    const journal = new MemoryJournal();
    new FakeAgent(journal)
      .start({ task: `Use the key ${OPENAI_KEY} to call the API.` })
      .submit(1)
      .call(1, 'c1', 'http_get', {
        url: 'https://api.test',
        headers: { Authorization: `Bearer ${OPENAI_KEY}` },
      })
      .result(1, 'c1', 'http_get', `Authorization: Bearer ${OPENAI_KEY}`)
      .submit(2);
    expect(JSON.stringify(journal.events)).not.toContain(OPENAI_KEY);
    const result = verifyJournal(journal.events, { rerender });
    expect(result).toMatchObject({ ok: true, checkedInferences: 2 });
  });

  it('hashInput masks secrets the way the journal does, and hashes secret-free input unchanged', () => {
    const secretInput = `token=${OPAQUE_SECRET}`;
    expect(hashInput('s', secretInput, TOOL_SPECS)).toBe(hashInput('s', redactText(secretInput), TOOL_SPECS));
    expect(hashInput('s', 'plain', TOOL_SPECS)).not.toBe(hashInput('s', 'plain.', TOOL_SPECS));
    expect(hashInput('s', 'plain', TOOL_SPECS)).not.toBe(hashInput('s', 'plain', TOOL_SPECS.slice(1)));
  });

  it('readJournal returns the redacted values', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
    dirs.push(dir);
    const file = path.join(dir, 'agent.jsonl');
    const writer = JournalWriter.open(file);
    new FakeAgent(writer).start({ metadata: { apiKey: OPAQUE_SECRET } });
    writer.close();
    const [started] = readJournal(file).events;
    expect(started?.type === 'Started' && started.metadata).toEqual({ apiKey: REDACTED });
  });
});
