/**
 * A simulated model that can orchestrate: offered `spawn_agent`, it spawns one worker per file its
 * task names, instructs each over `send_instruction`, collects them with `await_agents` and
 * delivers the combined result through `complete_task`. Offered anything else (the workers), it is
 * troupe's own simulated model. No key, no network; every answer is labelled `[simulated]`.
 *
 * troupe loads it in each worker thread as a provider module:
 *   providers: { simulated: { kind: 'module', module: '<this file>', export: 'createOrchestratingModel' } }
 *
 * Like the simulated model it is stateless: progress is read from the tool results in its input
 * (earlier rounds) and the ones of the current turn.
 */
import {
  createTurn,
  type ModelPrice,
  type ModelResponse,
  type Provider,
  SIMULATED_LABEL,
  SimulatedProvider,
  type SimulatedProviderOptions,
  type ToolResult,
  type Turn,
  type TurnRequest,
} from 'troupe';

/** Options: the simulated model's, plus how many workers at most. */
export interface OrchestratingModelOptions extends SimulatedProviderOptions {
  /** Workers spawned at most (one per file named in the task). @default 8 */
  readonly maxWorkers?: number;
  /** Definition the workers run. @default 'worker' */
  readonly workerAgent?: string;
}

const FILE_NAME =
  /(?:^|[\s`'"(])((?:[\w.@-]+\/)*[\w.@-]+\.(?:ts|js|mjs|md|json|jsonl|yaml|yml|txt))(?=$|[\s`'"),:;]|\.(?:\s|$))/gm;
const FOCUS = ['error handling', 'naming', 'tests', 'documentation', 'edge cases', 'performance'];

/** The provider factory troupe calls in each thread. */
export function createOrchestratingModel(options: OrchestratingModelOptions = {}): Provider {
  return new OrchestratingModel(options);
}

class OrchestratingModel implements Provider {
  readonly name = 'simulated';
  readonly #worker: SimulatedProvider;
  readonly #maxWorkers: number;
  readonly #workerAgent: string;

  constructor(options: OrchestratingModelOptions) {
    const { maxWorkers, workerAgent, ...simulated } = options;
    this.#worker = new SimulatedProvider(simulated);
    this.#maxWorkers = maxWorkers ?? 8;
    this.#workerAgent = workerAgent ?? 'worker';
  }

  /**
   * The simulated model's price (free). The loop prices a request from it when the receipt has no
   * cost (a request cancelled mid-turn, its usage estimated): without it such a worker's cost was
   * unknown, and the demo's summary said "no price for the model".
   */
  priceOf(model: string): ModelPrice {
    return this.#worker.priceOf(model);
  }

  turn(request: TurnRequest, signal?: AbortSignal): Turn {
    if (!request.tools.some((tool) => tool.name === 'spawn_agent')) return this.#worker.turn(request, signal);
    const seen: ToolResult[] = [];
    return createTurn(
      {
        provider: this.name,
        model: request.model || 'simulated',
        price: { inputPerMTok: 0, outputPerMTok: 0 },
        timeoutMs: request.timeoutMs,
        exchange: async (results, ctx) => {
          seen.push(...results);
          const response = this.#decide(request, seen);
          if (response.text !== '') ctx.emit({ type: 'text_delta', text: response.text });
          ctx.reportUsage({
            inputTokens: Math.ceil((request.system.length + request.input.length) / 4),
            outputTokens: Math.ceil((response.text.length + JSON.stringify(response.toolCalls).length) / 4),
            cachedInputTokens: 0,
            reasoningTokens: 0,
          });
          return response;
        },
      },
      signal,
    );
  }

  #decide(request: TurnRequest, seen: readonly ToolResult[]): ModelResponse {
    const history = request.input.indexOf('\nTool ');
    const task = history < 0 ? request.input : request.input.slice(0, history);
    const files = [...new Set([...task.matchAll(FILE_NAME)].map((match) => match[1] ?? ''))].slice(
      0,
      this.#maxWorkers,
    );
    const results = [...resultsIn(request.input), ...seen.map((r) => ({ name: r.name, text: r.result }))];
    const spawned = results
      .filter((r) => r.name === 'spawn_agent')
      .map((r) => /Spawned subagent (\S+) /.exec(r.text)?.[1])
      .filter((id): id is string => id !== undefined);
    const instructed = results.filter((r) => r.name === 'send_instruction').length;
    const awaited = results.find((r) => r.name === 'await_agents');
    const step = results.length;
    if (results.some((r) => r.name === 'complete_task'))
      return {
        text: `${SIMULATED_LABEL} Reviewed ${files.length} file(s) with ${spawned.length} worker(s).`,
        toolCalls: [],
        stopReason: 'end_turn',
      };
    if (spawned.length < files.length) {
      const file = files[spawned.length] ?? '';
      return call(step, 'spawn_agent', {
        agent: this.#workerAgent,
        task: `Review ${file}: read it and note one strength and one risk. Then wait for an instruction from the orchestrator before you finish with complete_task.`,
      });
    }
    if (instructed < spawned.length) {
      const agentId = spawned[instructed] ?? '';
      const focus = FOCUS[instructed % FOCUS.length] ?? 'clarity';
      return call(step, 'send_instruction', {
        agentId,
        text: `Focus on ${focus} in ${files[instructed] ?? 'your file'}.`,
      });
    }
    if (awaited === undefined) return call(step, 'await_agents', { mode: 'all' });
    return call(step, 'complete_task', {
      result: {
        summary: `${SIMULATED_LABEL} ${spawned.length} worker(s) reviewed ${files.join(', ')}.`,
        reviews: parseReviews(awaited.text),
      },
    });
  }
}

function call(step: number, name: string, args: Record<string, unknown>): ModelResponse {
  const toolCall = { id: `orch_${step}`, name, arguments: args, rawArguments: JSON.stringify(args) };
  return { text: '', toolCalls: [toolCall], stopReason: 'tool_calls' };
}

/** Tool results rendered into the input by earlier rounds: `Tool result (name): text`, up to the next entry. */
function resultsIn(input: string): { name: string; text: string }[] {
  const found: { name: string; text: string }[] = [];
  for (const entry of input.split(/\n(?=Tool call|Tool result|Assistant: )/)) {
    const match = /^Tool result \(([\w-]+)(?:, failed)?\): ([\s\S]*)$/.exec(entry);
    if (match) found.push({ name: match[1] ?? '', text: (match[2] ?? '').trim() });
  }
  return found;
}

/** The workers' results from the `await_agents` answer (a JSON array), or its text when it is not JSON. */
function parseReviews(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
