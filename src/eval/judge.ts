/**
 * The `judge` scorer: an agent definition grades an item's output. The judge is spawned through
 * the same Supervisor that runs the items (its journal lands next to theirs), told the task, the
 * rubric, the expected value and the output, and must finish with `complete_task`
 * `{ score, pass?, reason }`. A definition that declares no `outputSchema` is given
 * {@link JUDGE_RESULT_SCHEMA}, so a malformed verdict goes back to the model to fix.
 */
import type { AgentDefinition } from '../definition/types.ts';
import type { AgentLimits, AgentOutcome } from '../loop/types.ts';
import type { JsonSchema } from '../tools/types.ts';
import { clip, textOf } from './builtin-scorers.ts';
import {
  DEFAULT_JUDGE_MAX_STEPS,
  DEFAULT_JUDGE_THRESHOLD,
  DEFAULT_JUDGE_WALL_CLOCK_MS,
  JUDGE_TEXT_MAX_CHARS,
} from './constants.ts';
import type { JudgeScorerSpec, Score, ScoreInput } from './types.ts';

/** What a judge is spawned with; the Supervisor's `spawn` options. */
export interface JudgeSpawnOptions {
  readonly task: string;
  readonly id: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly provider?: string;
  readonly model?: string;
  readonly limits: AgentLimits;
  readonly signal?: AbortSignal;
}

/** Something that runs agents: a `Supervisor` is one. */
export interface JudgeSpawner {
  spawn(
    agent: string | AgentDefinition,
    options: JudgeSpawnOptions,
  ): { readonly id: string; readonly result: Promise<AgentOutcome> };
}

/** The `complete_task` result a judge must deliver (given to judges that declare no `outputSchema`). */
export const JUDGE_RESULT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    score: { type: 'number', description: 'How good the answer is, from 0 (wrong) to 1 (fully right).' },
    pass: { type: 'boolean', description: 'Whether the answer is acceptable.' },
    reason: { type: 'string', description: 'Why, in one or two sentences.' },
  },
  required: ['score', 'reason'],
};

/** How a judge is run: provider, model, id suffix, limits. */
export interface JudgeRunOptions {
  readonly spawner: JudgeSpawner;
  /** The definition to run when it is known (it gets {@link JUDGE_RESULT_SCHEMA} if it has no schema). */
  readonly definition?: AgentDefinition;
  readonly provider?: string;
  /** The run's model; the scorer's `model` wins. */
  readonly model?: string;
  /** Added to judge agent ids (`<item agent id>-judge-<scorer><suffix>`) so re-scoring never reuses one. */
  readonly idSuffix?: string;
  readonly signal?: AbortSignal;
}

/** Scores `input` with the judge of `spec`. Never throws: a failed judge is a score with an `error`. */
export async function runJudge(
  spec: JudgeScorerSpec,
  input: ScoreInput,
  options: JudgeRunOptions,
): Promise<Score> {
  const definition = options.definition;
  const agent: string | AgentDefinition =
    definition === undefined
      ? spec.agent
      : definition.outputSchema === undefined
        ? { ...definition, outputSchema: JUDGE_RESULT_SCHEMA }
        : definition;
  const model = spec.model ?? options.model;
  let handle: { readonly id: string; readonly result: Promise<AgentOutcome> };
  try {
    handle = options.spawner.spawn(agent, {
      task: judgeTask(spec, input),
      id: `${input.agentId}-judge-${spec.name}${options.idSuffix ?? ''}`,
      metadata: { judgeOf: input.agentId, scorer: spec.name, index: input.index },
      ...(options.provider === undefined ? {} : { provider: options.provider }),
      ...(model === undefined ? {} : { model }),
      limits: {
        maxSteps: spec.maxSteps ?? DEFAULT_JUDGE_MAX_STEPS,
        wallClockMs: DEFAULT_JUDGE_WALL_CLOCK_MS,
      },
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (cause) {
    return { score: 0, pass: false, error: clip(`the judge could not start: ${String(cause)}`) };
  }
  const outcome = await handle.result;
  const judge = { agentId: handle.id, usage: outcome.usage, costUsd: outcome.costUsd };
  if (outcome.status === 'failed')
    return {
      score: 0,
      pass: false,
      error: clip(`the judge failed (${outcome.reason}): ${outcome.error.message}`),
      judge,
    };
  if (outcome.result === undefined) {
    // A model that ignores the instructions answers in prose ("10/10!"): what it said is the clue.
    const said = outcome.answer.replace(/\s+/g, ' ').trim();
    return {
      score: 0,
      pass: false,
      error: clip(
        `the judge finished without delivering a verdict with complete_task; ${said === '' ? 'it said nothing' : `it said: ${JSON.stringify(said)}`}`,
      ),
      judge,
    };
  }
  const verdict = parseVerdict(outcome.result, spec.threshold ?? DEFAULT_JUDGE_THRESHOLD);
  return 'error' in verdict
    ? { score: 0, pass: false, error: clip(verdict.error), judge }
    : { ...verdict, judge };
}

/** The judge's verdict from its `complete_task` result. */
export function parseVerdict(
  result: unknown,
  threshold: number,
): { score: number; pass: boolean; detail?: string } | { error: string } {
  if (typeof result !== 'object' || result === null || Array.isArray(result))
    return { error: `the judge delivered no verdict object (got ${JSON.stringify(result) ?? 'nothing'})` };
  const { score, pass, reason } = result as Record<string, unknown>;
  if (typeof score !== 'number' || !(score >= 0 && score <= 1))
    return {
      error: `the judge's score must be a number from 0 to 1, got ${JSON.stringify(score) ?? 'nothing'}`,
    };
  if (pass !== undefined && typeof pass !== 'boolean')
    return { error: `the judge's pass must be true or false, got ${JSON.stringify(pass)}` };
  return {
    score,
    pass: pass ?? score >= threshold,
    ...(typeof reason === 'string' && reason !== '' ? { detail: clip(reason) } : {}),
  };
}

/** The judge's task: instructions, rubric, the item's task and context, the expected value, the output. */
export function judgeTask(spec: JudgeScorerSpec, input: ScoreInput): string {
  const sections = [
    'Grade the answer an agent gave to the task below. Finish by calling complete_task with ' +
      '{"score": <number from 0 (wrong) to 1 (fully right)>, "pass": <true or false>, "reason": "<one or two sentences>"}.',
  ];
  if (spec.rubric !== undefined) sections.push(`Rubric:\n${cut(spec.rubric)}`);
  sections.push(`The agent's task:\n${cut(input.task)}`);
  if (input.context.length > 0) sections.push(`The agent's context:\n${cut(input.context.join('\n\n'))}`);
  if (input.expected !== undefined)
    sections.push(`The expected answer (reference):\n${cut(textOf(input.expected))}`);
  sections.push(`The agent's answer:\n${cut(textOf(input.output))}`);
  return sections.join('\n\n');
}

function cut(text: string): string {
  if (text.length <= JUDGE_TEXT_MAX_CHARS) return text;
  return `${text.slice(0, JUDGE_TEXT_MAX_CHARS)}\n[cut: ${text.length - JUDGE_TEXT_MAX_CHARS} more characters not shown]`;
}
