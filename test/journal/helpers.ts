/**
 * Test helpers: a tiny agent that writes realistic journals, and a reference re-render of its
 * provider input from the journal alone (context, task, history with supersession, trailing states).
 */
import { REMOVED_MARKER, SUPERSEDED_MARKER } from '../../src/constants.ts';
import type { AuditEvent, AuditEventInput, EventOf } from '../../src/journal/events.ts';
import { hashInput } from '../../src/journal/events.ts';
import type { RenderedInput } from '../../src/journal/verify.ts';
import type { Receipt } from '../../src/providers/types.ts';
import type { StateUpdate, ToolSpec } from '../../src/tools/types.ts';

export const AGENT_ID = 'agent-1';

export const TOOL_SPECS: readonly ToolSpec[] = [
  {
    name: 'read_file',
    description: 'Reads a file.',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'http_get',
    description: 'Fetches a URL.',
    parameters: { type: 'object', properties: { url: { type: 'string' }, headers: { type: 'object' } } },
  },
  { name: 'complete_task', description: 'Finishes the task.', parameters: { type: 'object' } },
];

/** A fixed clock: every event gets the next second after 2025-01-01. */
export function steppingClock(): () => Date {
  let tick = 0;
  return () => new Date(Date.UTC(2025, 0, 1, 0, 0, tick++));
}

export function receipt(inputTokens: number, outputTokens: number, costUsd?: number): Receipt {
  return {
    provider: 'scripted',
    model: 'test-model',
    requests: 1,
    usage: { inputTokens, outputTokens, cachedInputTokens: 0, reasoningTokens: 0 },
    latencyMs: 10,
    httpStatus: 200,
    retries: 0,
    costUsd,
  };
}

/** The reference projection, rebuilt from events. */
class Replay {
  readonly #context: readonly string[];
  readonly #task: string;
  readonly #history: { text: string; keys: string[] }[] = [];
  readonly #states = new Map<string, string>();

  constructor(started: EventOf<'Started'>) {
    this.#context = started.context;
    this.#task = started.task;
  }

  apply(event: AuditEvent): void {
    if (event.type === 'HistoryAppended')
      this.#history.push({ text: event.text, keys: [...event.displayedKeys] });
    if (event.type !== 'StateChanged') return;
    for (const entry of this.#history) {
      if (!entry.keys.includes(event.key)) continue;
      entry.text = event.text === null ? REMOVED_MARKER : SUPERSEDED_MARKER;
      entry.keys = entry.keys.filter((key) => key !== event.key);
    }
    this.#states.delete(event.key);
    if (event.text !== null) this.#states.set(event.key, event.text);
  }

  render(): string {
    const displayed = new Set(this.#history.flatMap((entry) => entry.keys));
    const states = [...this.#states].filter(([key]) => !displayed.has(key)).map(([, text]) => text);
    return [...this.#context, this.#task, ...this.#history.map((entry) => entry.text), ...states]
      .filter((section) => section !== '')
      .join('\n\n');
  }
}

/** A {@link Rerender} built on the reference projection. */
export function rerender(events: readonly AuditEvent[], index: number): RenderedInput {
  const started = events[0];
  const inference = events[index];
  if (started?.type !== 'Started' || inference?.type !== 'InferenceSubmitted') {
    throw new Error(`event ${index} is not an InferenceSubmitted after a Started event`);
  }
  const replay = new Replay(started);
  for (const event of events.slice(1, index)) replay.apply(event);
  return { system: started.systemPrompt, input: replay.render(), tools: toolsFor(started, inference.tools) };
}

function toolsFor(started: EventOf<'Started'>, names: readonly string[]): ToolSpec[] {
  return names.map((name) => {
    const spec = started.toolSpecs.find((candidate) => candidate.name === name);
    if (!spec) throw new Error(`unknown tool ${name}`);
    return spec;
  });
}

/** A sink that returns the stored event: a JournalWriter or a MemoryJournal. */
export interface ChainingSink {
  appendEvent(input: AuditEventInput): AuditEvent;
}

/** Writes the events a loop would write, computing InferenceSubmitted hashes from its own render. */
export class FakeAgent {
  readonly #sink: ChainingSink;
  readonly #events: AuditEvent[] = [];
  #replay: Replay | undefined;
  #started: EventOf<'Started'> | undefined;

  constructor(sink: ChainingSink) {
    this.#sink = sink;
  }

  /** Appends through the sink and keeps the redacted event as the reader would see it. */
  append(input: AuditEventInput): void {
    const stored = this.#sink.appendEvent(input);
    this.#events.push(stored);
    if (stored.type === 'Started') {
      this.#started = stored;
      this.#replay = new Replay(stored);
    } else {
      this.#replay?.apply(stored);
    }
  }

  start(overrides: Partial<AuditEventInput & { type: 'Started' }> = {}): this {
    this.append({
      type: 'Started',
      agentId: AGENT_ID,
      definition: { name: 'tester', hash: 'a'.repeat(64) },
      provider: 'scripted',
      model: 'test-model',
      contextWindow: 128_000,
      maxInputTokens: 100_000,
      context: ['You work in /repo.'],
      task: 'Read the README and report.',
      metadata: { run: 7 },
      systemPrompt: 'You are a careful agent.',
      toolSpecs: TOOL_SPECS,
      ...overrides,
    } as AuditEventInput);
    return this;
  }

  /** Resumes writing after `events` (a journal read back). */
  adopt(events: readonly AuditEvent[]): this {
    for (const event of events) {
      this.#events.push(event);
      if (event.type === 'Started') {
        this.#started = event;
        this.#replay = new Replay(event);
      } else {
        this.#replay?.apply(event);
      }
    }
    return this;
  }

  submit(round: number, tools: readonly string[] = ['read_file', 'http_get', 'complete_task']): this {
    const started = this.#started;
    const replay = this.#replay;
    if (!started || !replay) throw new Error('not started');
    const specs = toolsFor(started, tools);
    this.append({
      type: 'InferenceSubmitted',
      agentId: AGENT_ID,
      round,
      inputHash: hashInput(started.systemPrompt, replay.render(), specs),
      estimatedTokens: 4200 + round,
      tools,
    });
    return this;
  }

  call(round: number, callId: string, name: string, args: Record<string, unknown>): this {
    this.append({ type: 'ToolCall', agentId: AGENT_ID, round, callId, name, modelName: name, args });
    this.history(round, `Tool call: ${name} ${JSON.stringify(args)}`, [], callId);
    return this;
  }

  result(
    round: number,
    callId: string,
    name: string,
    text: string,
    options: { ok?: boolean; stateUpdates?: StateUpdate[]; displayed?: string[] } = {},
  ): this {
    const ok = options.ok ?? true;
    const stateUpdates = options.stateUpdates ?? [];
    const displayed = options.displayed ?? [];
    this.append({
      type: 'ToolResult',
      agentId: AGENT_ID,
      round,
      callId,
      name,
      ok,
      projectionAccepted: true,
      text,
      stateUpdates,
      displayedStateKeys: displayed,
    });
    this.history(round, `Tool result: ${text}`, displayed, callId);
    if (ok) {
      for (const update of stateUpdates) {
        this.append({
          type: 'StateChanged',
          agentId: AGENT_ID,
          key: update.key,
          text: update.text,
          round,
          callId,
        });
      }
    }
    return this;
  }

  history(round: number, text: string, displayedKeys: readonly string[] = [], callId?: string): this {
    this.append({ type: 'HistoryAppended', agentId: AGENT_ID, round, text, displayedKeys, callId });
    return this;
  }

  receipt(round: number, inputTokens: number, outputTokens: number, costUsd?: number): this {
    this.append({
      type: 'ProviderReceipt',
      agentId: AGENT_ID,
      round,
      receipt: receipt(inputTokens, outputTokens, costUsd),
    });
    return this;
  }

  complete(answer: string, rounds: number): this {
    this.append({
      type: 'Completed',
      agentId: AGENT_ID,
      answer,
      usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: 0,
      rounds,
    });
    return this;
  }

  get events(): readonly AuditEvent[] {
    return this.#events;
  }
}

/**
 * A two-round agent: reads a file that sets a state, reads it again (superseding the first
 * display), calls an HTTP tool with an auth header, and completes.
 */
export function writeSampleRun(sink: ChainingSink): FakeAgent {
  return new FakeAgent(sink)
    .start()
    .submit(1)
    .call(1, 'c1', 'read_file', { path: 'README.md' })
    .result(1, 'c1', 'read_file', 'README v1', {
      stateUpdates: [{ key: 'file:README.md', text: 'README v1' }],
      displayed: ['file:README.md'],
    })
    .receipt(1, 4000, 50, 0.01)
    .submit(2)
    .call(2, 'c2', 'http_get', {
      url: 'https://example.com',
      headers: { Authorization: 'Bearer sk-live-0123456789abcdef' },
    })
    .result(2, 'c2', 'http_get', 'status 200')
    .call(2, 'c3', 'read_file', { path: 'README.md' })
    .result(2, 'c3', 'read_file', 'README v2', {
      stateUpdates: [{ key: 'file:README.md', text: 'README v2' }],
      displayed: ['file:README.md'],
    })
    .receipt(2, 4100, 60, 0.02)
    .submit(3)
    .receipt(3, 4200, 20)
    .complete('The README says hello.', 3);
}
