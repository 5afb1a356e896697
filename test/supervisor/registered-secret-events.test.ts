/**
 * A value the program registers for masking (`registerSecretValues`) in its own thread is masked
 * in what the supervisor tells it and exports of agents that run in other threads, which were
 * never told the value: the model's text, a tool call's arguments and output, span content, the
 * arguments of a call that waits for approval.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../src/journal/canonical-json.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { registerSecretValues } from '../../src/journal/redact.ts';
import type { ScriptedResponse } from '../../src/providers/scripted.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { tempDir } from './helpers.ts';

const SCRIPTED = fileURLToPath(new URL('../fixtures/mcp/scripted-provider.ts', import.meta.url));
/** Shapeless, and registered only in this test's thread: no pattern masks it. */
const SECRET = 'Ry4uPq8sWm2zLx6cVn0b';
/** A GitHub token's shape: masked in the agent's thread as well, where nobody registered it. */
const SHAPED = `ghp_${'Kx7Qm2Wv9Zr4Tn6Yb1Lp3Hs8'}`;

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('a secret the program registered', () => {
  it('is masked in agent:text, agent:tool and span content of an agent in a worker thread', async () => {
    registerSecretValues([SECRET]);
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const steps: ScriptedResponse[] = [
      {
        text: `The vault value is ${SECRET}.`,
        toolCalls: [{ name: 'glob', arguments: { pattern: `${SECRET}*` } }],
      },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { found: SECRET } } }] },
    ];
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      tracing: { tracer: provider.getTracer('troupe'), captureContent: true },
    });
    const events: string[] = [];
    for (const name of ['agent:text', 'agent:tool'] as const) {
      supervisor.on(name, (event: unknown) => events.push(`${name} ${JSON.stringify(event)}`));
    }
    const outcome = await supervisor.spawn('worker', { task: 'Find the vault value.' }).result;
    await supervisor.close();
    expect(outcome.status).toBe('completed');
    // Masked, not dropped.
    expect(events.join('\n')).toContain('The vault value is [REDACTED].');
    expect(events.filter((event) => event.includes(SECRET))).toEqual([]);
    const spans = exporter.getFinishedSpans();
    expect(JSON.stringify(spans.map((span) => [span.attributes, span.events]))).toContain('[REDACTED]');
    const leaking = spans.filter((span) => JSON.stringify([span.attributes, span.events]).includes(SECRET));
    expect(leaking.map((span) => span.name)).toEqual([]);
  }, 60_000);
});

describe('a secret the program registered, in the journal of an agent in a worker thread', () => {
  it('is masked, registered before the threads start and after', async () => {
    const before = 'Jm5tRw8qZp3xKc7vBn2d';
    const after = 'Hs9wLq4zTy1rPm6kXv3c';
    registerSecretValues([before]);
    const dir = tempDir();
    const steps: ScriptedResponse[] = [
      {
        text: `Found ${before} and ${after}.`,
        toolCalls: [{ name: 'glob', arguments: { pattern: `${before}-${after}*` } }],
      },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { done: true } } }] },
    ];
    supervisor = new Supervisor({
      threads: 1,
      cwd: dir,
      journalDir: path.join(dir, 'journals'),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
    });
    await supervisor.start();
    // The thread runs already: it hears of this one before the spawn.
    registerSecretValues([after]);
    const handle = supervisor.spawn('worker', { task: 'Find the values.' });
    const outcome = await handle.result;
    await supervisor.close();
    expect(outcome.status).toBe('completed');
    const journal = readFileSync(path.join(dir, 'journals', `${handle.id}.jsonl`), 'utf8');
    // Masked, not dropped.
    expect(journal).toContain('Found [REDACTED] and [REDACTED].');
    expect(journal).not.toContain(before);
    expect(journal).not.toContain(after);
  }, 60_000);
});

describe('a secret in the arguments of a call that asks for approval', () => {
  it('is masked in agent:approval, agent:decision and the journal; the approved tool runs with it', async () => {
    registerSecretValues([SECRET]);
    const dir = tempDir();
    const command = `printf '%s %s' ${SECRET} ${SHAPED} > got.txt`;
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ name: 'run_terminal_cmd', arguments: { command } }] },
      { toolCalls: [{ name: 'complete_task', arguments: { result: { done: true } } }] },
    ];
    supervisor = new Supervisor({
      threads: 1,
      cwd: dir,
      journalDir: path.join(dir, 'journals'),
      providers: { scripted: { kind: 'module', module: SCRIPTED, options: { steps } } },
      permissions: { ask: ['Bash'] },
    });
    const events: string[] = [];
    supervisor.on('agent:approval', (event) => {
      events.push(`agent:approval ${JSON.stringify(event)}`);
      void supervisor?.approve(event.request.requestId);
    });
    for (const name of ['agent:decision', 'agent:tool'] as const) {
      supervisor.on(name, (event: unknown) => events.push(`${name} ${JSON.stringify(event)}`));
    }
    const handle = supervisor.spawn('worker', { task: 'Store the values.' });
    const outcome = await handle.result;
    await supervisor.close();
    expect(outcome, JSON.stringify(events)).toMatchObject({ status: 'completed' });
    // The tool ran with what the model gave it.
    expect(readFileSync(path.join(dir, 'got.txt'), 'utf8')).toBe(`${SECRET} ${SHAPED}`);

    const asked = events.filter((event) => event.startsWith('agent:approval'));
    expect(asked).toHaveLength(1);
    // Masked, not dropped: a person sees which call it is.
    expect(asked[0]).toContain(`printf '%s %s' [REDACTED] [REDACTED] > got.txt`);
    expect(events.filter((event) => event.includes(SECRET) || event.includes(SHAPED))).toEqual([]);
    // Nor a hash of the real arguments, from which a short secret could be recovered by guessing.
    const realHash = sha256Hex(canonicalJson({ command }));
    expect(events.filter((event) => event.includes(realHash))).toEqual([]);
    expect(asked[0]).toContain('"argsMasked":true');
    const journal = readFileSync(path.join(dir, 'journals', `${handle.id}.jsonl`), 'utf8');
    expect(journal).not.toContain(SHAPED);
    expect(journal).not.toContain(realHash);
    const requested = readJournal(path.join(dir, 'journals', `${handle.id}.jsonl`)).events.filter(
      (event) => event.type === 'ApprovalRequested',
    );
    expect(requested).toHaveLength(1);
  }, 60_000);
});
