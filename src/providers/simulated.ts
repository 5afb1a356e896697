/**
 * The built-in simulated model: no key, no network. It acts on the tools it is offered: reads the
 * files the task names (`read_file`), waits for instructions when asked (`wait_for_instruction`),
 * then finishes with `complete_task` and a short structured result, or with a text answer. Every
 * answer is labelled `[simulated]`. Given a seed it is deterministic, whatever the call order.
 *
 * It is stateless between turns: progress is read from the input, where the loop renders earlier
 * tool results as history lines starting with `Tool result` (see `resultMarker`). In a session
 * (`troupe chat`) a turn starts at the last user message (`User: ...`, see `userMarker`): only the
 * tool results after it count, and the files it names are read, so every turn follows the same
 * plan as the first one (reads, then `complete_task` when offered).
 */

import { sleep as defaultSleep } from '../abort.ts';
import { MAX_TIMER_MS } from '../constants.ts';
import { describeValue, ProviderError, UserError } from '../errors.ts';
import { timerDelay } from '../option-checks.ts';
import type { ToolSpec } from '../tools/types.ts';
import { DEFAULT_MODELS, DEFAULT_REQUEST_TIMEOUT_MS } from './constants.ts';
import { estimateTokens } from './estimate.ts';
import { checkNumber, checkType } from './options.ts';
import type { ModelPrice } from './pricing.ts';
import {
  argumentsFromSchema,
  countLinesStartingWith,
  describeAsk,
  type Facts,
  findFileNames,
  historyStart,
  requestedWaits,
} from './simulated-plan.ts';
import { createTurn, type ExchangeContext, type ModelResponse, type ToolResult } from './turn-runner.ts';
import type { Admission, Provider, ProviderHooks, ToolCall, Turn, TurnRequest } from './types.ts';

/** Latency of each simulated request: a fixed delay, or uniform in mean ± jitter. */
export type SimulatedLatency = number | { readonly meanMs: number; readonly jitterMs: number };

/** Options of {@link SimulatedProvider}. */
export interface SimulatedProviderOptions {
  /** Seed of every random choice (latency jitter, failures). @default 1 */
  readonly seed?: number;
  /**
   * Exact number of tool calls before finishing (benchmarks): the natural plan (reads, then
   * waits) is cut or padded with more reads (or calls to another offered tool) to this length.
   * @default the natural plan
   */
  readonly rounds?: number;
  /** Instructions to wait for when `wait_for_instruction` is offered. @default what the task asks (0 or more) */
  readonly waits?: number;
  /** @default 0 (answers without a timer) */
  readonly latency?: SimulatedLatency;
  /**
   * Longest one request may take once admitted (its `latency`), as an HTTP provider's `timeoutMs`:
   * then it fails with ProviderError `timeout` (`fields.timeoutMs`). A request's own
   * `TurnRequest.timeoutMs` wins.
   * @default 600000 (`DEFAULT_REQUEST_TIMEOUT_MS`)
   */
  readonly timeoutMs?: number;
  /** Share of requests, in [0, 1], that fail with a `server_error`. @default 0 */
  readonly failureRate?: number;
  /** Most files read per task. @default 5 */
  readonly maxFiles?: number;
  /** Line prefix of a rendered tool result in the input. @default 'Tool result' */
  readonly resultMarker?: string;
  /** Line prefix of a rendered tool call in the input. @default 'Tool call' */
  readonly callMarker?: string;
  /**
   * Line prefix of a session's user message in the input, after the task: the current turn starts
   * at the last one. @default 'User: '
   */
  readonly userMarker?: string;
  /** Model-facing names of the tools it knows. @default the canonical names */
  readonly toolNames?: {
    readonly readFile?: string;
    readonly waitForInstruction?: string;
    readonly completeTask?: string;
  };
  /** @default 'simulated' */
  readonly name?: string;
  /** Shared admission (the supervisor's per-key limits), asked before each simulated request. */
  readonly admission?: Admission;
  /** Accepted for symmetry with HTTP providers; the simulated model is never rate limited. */
  readonly onRateLimited?: ProviderHooks['onRateLimited'];
  /** Used for latency; tests may inject a fake one. @default a timer that honours the signal */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const FREE: ModelPrice = { inputPerMTok: 0, outputPerMTok: 0 };

/** Marks every answer of the simulated model. */
export const SIMULATED_LABEL = '[simulated]';

interface Action {
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** What one turn knows; the simulated model keeps nothing between turns. */
interface TurnState {
  readonly request: TurnRequest;
  /** The input before its history: context and task. */
  readonly task: string;
  /** How its answers name the task (and the context): see `describeAsk`. */
  readonly ask: string;
  readonly offered: ReadonlyMap<string, ToolSpec>;
  readonly files: readonly string[];
  /** Tool results earlier rounds rendered into the input. */
  readonly earlierResults: number;
  /** Tool results answered in this turn. */
  readonly seen: ToolResult[];
  plan: Action[] | undefined;
}

const toolCharsCache = new WeakMap<readonly ToolSpec[], number>();

function toolChars(tools: readonly ToolSpec[]): number {
  let chars = toolCharsCache.get(tools);
  if (chars === undefined) {
    chars = JSON.stringify(tools).length;
    toolCharsCache.set(tools, chars);
  }
  return chars;
}

/** FNV-1a, then a mulberry32 step: a cheap, well-spread seeded random in [0, 1). */
function seededRandom(seed: number, text: string, step: number): number {
  let hash = (2166136261 ^ seed ^ Math.imul(step + 1, 2654435761)) >>> 0;
  for (let index = 0; index < text.length; index += 1) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 16777619) >>> 0;
  }
  let t = (hash + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/**
 * Checks the options of a simulated provider without building one: UserError `invalid_option`
 * (fields `provider`, `option`) for a value of the wrong type or range.
 */
export function checkSimulatedOptions(options: SimulatedProviderOptions = {}): void {
  const name = options.name ?? 'simulated';
  checkNumber(name, options, 'seed', { min: Number.MIN_SAFE_INTEGER, integer: true });
  checkNumber(name, options, 'rounds', { min: 0, integer: true });
  checkNumber(name, options, 'waits', { min: 0, integer: true });
  checkNumber(name, options, 'failureRate', { min: 0, max: 1 });
  checkNumber(name, options, 'maxFiles', { min: 0, integer: true });
  checkNumber(name, options, 'timeoutMs', { min: 1, integer: true, max: MAX_TIMER_MS });
  checkType(name, options, 'sleep', 'function');
  const latency = options.latency ?? 0;
  if (typeof latency === 'number') checkNumber(name, options, 'latency', { min: 0 });
  else if (typeof latency === 'object' && latency !== null && 'meanMs' in latency && 'jitterMs' in latency) {
    const { meanMs, jitterMs } = latency;
    checkNumber(name, { 'latency.meanMs': meanMs }, 'latency.meanMs', { min: 0 });
    checkNumber(name, { 'latency.jitterMs': jitterMs }, 'latency.jitterMs', { min: 0 });
  } else {
    throw new UserError(
      'invalid_option',
      `Expected \`latency\` to be milliseconds or { meanMs, jitterMs }, got ${describeValue(latency)}.`,
      { provider: name, option: 'latency' },
    );
  }
  checkType(name, options, 'admission', 'object');
}

/** The simulated model. */
export class SimulatedProvider implements Provider {
  readonly name: string;
  readonly #seed: number;
  readonly #rounds: number | undefined;
  readonly #waits: number | undefined;
  readonly #latency: SimulatedLatency;
  readonly #timeoutMs: number;
  readonly #failureRate: number;
  readonly #maxFiles: number;
  readonly #markers: readonly [result: string, call: string];
  readonly #userMarker: string;
  readonly #tools: {
    readonly readFile: string;
    readonly waitForInstruction: string;
    readonly completeTask: string;
  };
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #admission: Admission | undefined;

  constructor(options: SimulatedProviderOptions = {}) {
    checkSimulatedOptions(options);
    const name = options.name ?? 'simulated';
    const latency = options.latency ?? 0;
    this.name = name;
    this.#seed = options.seed ?? 1;
    this.#rounds = options.rounds;
    this.#waits = options.waits;
    this.#latency = latency;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#failureRate = options.failureRate ?? 0;
    this.#maxFiles = options.maxFiles ?? 5;
    this.#markers = [options.resultMarker ?? 'Tool result', options.callMarker ?? 'Tool call'];
    this.#userMarker = options.userMarker ?? 'User: ';
    this.#tools = {
      readFile: options.toolNames?.readFile ?? 'read_file',
      waitForInstruction: options.toolNames?.waitForInstruction ?? 'wait_for_instruction',
      completeTask: options.toolNames?.completeTask ?? 'complete_task',
    };
    this.#sleep = options.sleep ?? defaultSleep;
    this.#admission = options.admission;
  }

  /** The simulated model costs nothing. */
  priceOf(_model: string): ModelPrice {
    return FREE;
  }

  turn(request: TurnRequest, signal?: AbortSignal): Turn {
    const { task, turnInput } = this.#currentTurn(request);
    const offered = new Map<string, ToolSpec>();
    for (const tool of request.tools) offered.set(tool.name, tool);
    const state: TurnState = {
      request,
      task,
      ask: describeAsk(task, request.task),
      offered,
      files: offered.has(this.#tools.readFile) ? findFileNames(task, this.#maxFiles) : [],
      earlierResults: countLinesStartingWith(turnInput, this.#markers[0]),
      seen: [],
      plan: undefined,
    };
    return createTurn(
      {
        provider: this.name,
        model: request.model || DEFAULT_MODELS.simulated,
        price: FREE,
        // The loop sets no request limit: without its own, a plan's `latency: 600000` (or a
        // mistyped one) held its agent until the wall clock, unlike any HTTP provider.
        timeoutMs: request.timeoutMs ?? this.#timeoutMs,
        exchange: (results, ctx) => {
          state.seen.push(...results);
          return this.#exchange(state, ctx);
        },
      },
      signal,
    );
  }

  /**
   * The task this turn works on and the input of this turn alone. Outside a session, the input
   * before its history, and the whole input. In a session, whose input holds earlier turns (their
   * messages, tool calls and answers) before the last user message: the input before the first
   * message, followed by the last message, and the input from that message on. Counting an earlier
   * turn's results as this turn's had every turn after the first answer in text at once, then get
   * reminded to call `complete_task` three times before being forced to.
   */
  #currentTurn(request: TurnRequest): { task: string; turnInput: string } {
    const { input } = request;
    const taskAt = request.task === undefined || request.task === '' ? -1 : input.indexOf(request.task);
    const afterTask = taskAt < 0 ? 0 : taskAt + (request.task?.length ?? 0);
    const needle = `\n${this.#userMarker}`;
    const turnStart = input.lastIndexOf(needle);
    if (turnStart < afterTask)
      return { task: input.slice(0, historyStart(input, this.#markers)), turnInput: input };
    const turnInput = input.slice(turnStart);
    const openingEnd = afterTask + historyStart(input.slice(afterTask), [...this.#markers, this.#userMarker]);
    const message = turnInput.slice(0, historyStart(turnInput.slice(1), this.#markers) + 1);
    return { task: `${input.slice(0, openingEnd)}${message}`, turnInput };
  }

  async #exchange(state: TurnState, ctx: ExchangeContext): Promise<ModelResponse> {
    const { request, task, seen } = state;
    const done = state.earlierResults + seen.length;
    const delay = this.#delay(task, done);
    // Like an HTTP provider, each simulated request holds an admission slot while it "runs", so
    // shared concurrency limits and 429 pauses apply to it too.
    const release = await this.#admission
      ?.acquire(
        {
          provider: this.name,
          model: request.model,
          estimatedInputTokens: estimateTokens(request.input.length),
        },
        ctx.signal,
      )
      .catch((error: unknown) => {
        ctx.reportNotSent();
        throw error;
      });
    try {
      // Past the longest timer delay Node fires at once: the request limit (at most that) ends it first.
      if (delay > 0) await ctx.withTimeout((signal) => this.#sleep(timerDelay(delay), signal));
    } finally {
      release?.(undefined);
    }
    if (this.#failureRate > 0 && seededRandom(this.#seed + 1, task, done) < this.#failureRate) {
      throw new ProviderError('server_error', `Simulated failure (failureRate ${this.#failureRate}).`, {
        provider: this.name,
        simulated: true,
      });
    }
    const response = this.#decide(state, done);
    if (response.text !== '') ctx.emit({ type: 'text_delta', text: response.text });
    const inputChars = request.system.length + request.input.length + toolChars(request.tools);
    const resultChars = seen.reduce((sum, result) => sum + result.result.length, 0);
    const outputChars =
      response.text.length + response.toolCalls.reduce((sum, call) => sum + call.rawArguments.length, 0);
    ctx.reportUsage({
      inputTokens: estimateTokens(inputChars + resultChars),
      outputTokens: estimateTokens(outputChars),
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
    return response;
  }

  #delay(task: string, done: number): number {
    const latency = this.#latency;
    if (typeof latency === 'number') return latency;
    if (latency.jitterMs === 0) return latency.meanMs;
    const offset = (seededRandom(this.#seed, task, done) * 2 - 1) * latency.jitterMs;
    return Math.max(0, Math.round(latency.meanMs + offset));
  }

  #decide(state: TurnState, done: number): ModelResponse {
    const { request, offered, seen } = state;
    const choice = request.toolChoice;
    const completed = seen.some((result) => result.name === this.#tools.completeTask);
    if (choice === 'none' || offered.size === 0 || completed)
      return this.#text(this.#facts(state, done).summary);
    // A forced tool is called once per turn; the continuation after its result is not forced again.
    const forced = typeof choice === 'object' ? offered.get(choice.tool) : undefined;
    if (forced !== undefined && !seen.some((result) => result.name === forced.name)) {
      return this.#call(done, forced.name, argumentsFromSchema(forced.parameters, this.#facts(state, done)));
    }
    // The plan depends only on the task and the tools, so it is made once per turn.
    state.plan ??= this.#plan(state.task, offered, state.files, this.#facts(state, done));
    const next = state.plan[done];
    if (next !== undefined) return this.#call(done, next.name, next.args);
    const complete = offered.get(this.#tools.completeTask);
    const facts = this.#facts(state, done);
    if (done === state.plan.length && complete !== undefined) {
      return this.#call(done, complete.name, argumentsFromSchema(complete.parameters, facts));
    }
    return this.#text(facts.summary);
  }

  #facts(state: TurnState, done: number): Facts {
    // Pushed, not filter().map()ped: an optimized map() returns a holey array where the
    // interpreter's is packed, so this code deopted once it was optimized (and #plan below).
    const instructions: string[] = [];
    for (const result of state.seen) {
      if (result.name === this.#tools.waitForInstruction) instructions.push(result.result);
    }
    const summary = this.#summary(state.ask, state.files, done, instructions);
    return { summary, files: state.files, file: undefined, instructions };
  }

  #plan(
    task: string,
    offered: ReadonlyMap<string, ToolSpec>,
    files: readonly string[],
    facts: Facts,
  ): Action[] {
    const readFile = offered.get(this.#tools.readFile);
    const read = (file: string): Action | undefined =>
      readFile && { name: readFile.name, args: argumentsFromSchema(readFile.parameters, { ...facts, file }) };
    const reads: Action[] = [];
    for (const file of files) {
      const action = read(file);
      if (action !== undefined) reads.push(action);
    }
    const wait = offered.get(this.#tools.waitForInstruction);
    const waitCount = wait === undefined ? 0 : (this.#waits ?? requestedWaits(task));
    const waits: Action[] = Array.from({ length: waitCount }, () => ({
      name: this.#tools.waitForInstruction,
      args: wait === undefined ? {} : argumentsFromSchema(wait.parameters, facts),
    }));
    if (this.#rounds === undefined) return [...reads, ...waits];
    const padding: Action[] = [];
    const filler = this.#filler(offered, files, facts);
    for (let count = reads.length + waits.length; filler !== undefined && count < this.#rounds; count += 1) {
      padding.push(filler(padding.length));
    }
    return [...reads, ...padding, ...waits].slice(0, this.#rounds);
  }

  /** What pads a plan up to `rounds`: more reads, else calls to the first ordinary tool offered. */
  #filler(offered: ReadonlyMap<string, ToolSpec>, files: readonly string[], facts: Facts) {
    const readFile = offered.get(this.#tools.readFile);
    if (readFile !== undefined) {
      return (index: number): Action => ({
        name: readFile.name,
        args: argumentsFromSchema(readFile.parameters, {
          ...facts,
          file: files[index % Math.max(1, files.length)] ?? 'README.md',
        }),
      });
    }
    const special = new Set([this.#tools.completeTask, this.#tools.waitForInstruction]);
    const other = [...offered.values()].find((tool) => !special.has(tool.name));
    if (other === undefined) return undefined;
    return (): Action => ({ name: other.name, args: argumentsFromSchema(other.parameters, facts) });
  }

  #summary(ask: string, files: readonly string[], done: number, instructions: readonly string[]): string {
    const parts = [`${SIMULATED_LABEL} ${ask}`];
    if (files.length > 0) parts.push(`files: ${files.join(', ')}`);
    parts.push(`${done} tool result(s) seen`);
    if (instructions.length > 0) parts.push(`last instruction: ${instructions.at(-1)?.slice(0, 80)}`);
    return `${parts.join('; ')}.`;
  }

  #text(text: string): ModelResponse {
    return { text, toolCalls: [], stopReason: 'end_turn' };
  }

  #call(done: number, name: string, args: Record<string, unknown>): ModelResponse {
    const call: ToolCall = { id: `sim_${done}`, name, arguments: args, rawArguments: JSON.stringify(args) };
    return { text: '', toolCalls: [call], stopReason: 'tool_calls' };
  }
}
