/**
 * The loop proper: round after round until exactly one terminal event. Before each round (and, in
 * the round, before each further request) the limits are checked; after it, {@link decideNext}
 * says what follows, and this function only carries it out.
 */
import { DEFAULT_RECOVERY, TRUNCATION_NOTICE } from '../constants.ts';
import { redactValue } from '../journal/redact.ts';
import { knownCost } from '../journal/usage.ts';
import { extend } from '../objects.ts';
import type { Sleep } from '../tools/retry.ts';
import type { RunContext } from './context.ts';
import { abortEnding, decideNext, type Ending, limitVerdict } from './decide.ts';
import { terminalEvent } from './outcome.ts';
import { type PendingCapture, runRound } from './round.ts';
import type { AgentOutcome } from './types.ts';

/** What the loop is given besides the run. */
export interface LoopOptions {
  readonly sleep: Sleep;
  readonly random?: () => number;
}

/** Runs `run` from where it stands to its outcome, recording the terminal event. */
export function runLoop(run: RunContext, options: LoopOptions): Promise<AgentOutcome> {
  // Not an async function: its frame would stay suspended as long as the agent runs (and parks).
  return runTurn(run, options).then((ending) => end(run, ending));
}

/**
 * Rounds until the task ends: with an accepted `complete_task` result, a final answer, or a
 * failure. A session runs one turn per user message (src/loop/session.ts).
 */
export async function runTurn(run: RunContext, options: LoopOptions): Promise<Ending> {
  const requirement = run.definition.completionRequirement;
  const recovery = requirement?.recovery ?? DEFAULT_RECOVERY;
  const required = requirement
    ? { tool: requirement.tool, modelName: run.toolbox.modelName(requirement.tool) ?? requirement.tool }
    : undefined;
  let misses = 0;
  let forceTool = false;
  let capture: PendingCapture | undefined;

  if (run.completion)
    return { kind: 'complete', answer: JSON.stringify(run.completion.value), result: run.completion.value };

  for (;;) {
    // A zero-latency model and synchronous tools would otherwise run every round as one chain of
    // microtasks, starving the thread's event loop: heartbeats and cancels could not get in.
    await yieldToEventLoop();
    const stop = limitVerdict(run);
    if (stop) return stop;

    const result = await runRound(
      run,
      extend(
        capture ? { capture } : {},
        forceTool && required ? { toolChoice: { tool: required.modelName } } : {},
      ),
    );
    const wasCapture = capture !== undefined;
    capture = undefined;
    const next = decideNext({
      run,
      result,
      wasCapture,
      requirement: required,
      recovery,
      misses,
      ...(options.random ? { random: options.random } : {}),
    });
    if (next.kind !== 'again') return next;
    run.truncations = next.continueTruncated ? run.truncations + 1 : 0;
    capture = next.capture;
    if (next.continueTruncated) run.pushHistory(TRUNCATION_NOTICE, 'continuation');
    if (next.remind && requirement) {
      misses = next.remind.misses;
      forceTool = next.remind.forceTool;
      run.pushHistory(requirement.reminder, 'reminder');
      try {
        await options.sleep(next.remind.delayMs, run.signal);
      } catch {
        return abortEnding(run);
      }
    }
  }
}

/** Records the terminal event of `ending` and returns the outcome. */
export function end(run: RunContext, ending: Ending): AgentOutcome {
  const totals = {
    usage: run.totals.usage,
    costUsd: knownCost(run.totals),
    rounds: run.roundsUsed,
    steps: run.stepsUsed,
    ...(run.replay ? { replay: run.replay.counts } : {}),
  };
  const outcome: AgentOutcome =
    ending.kind === 'complete'
      ? { status: 'completed', agentId: run.agentId, answer: ending.answer, result: ending.result, ...totals }
      : {
          status: 'failed',
          agentId: run.agentId,
          reason: ending.reason,
          // Masked as the journal masks it: a provider's error text can echo the API key (a 401
          // body), and outcomes and `agent:failed` events are what programs log.
          error: redactValue(ending.error),
          ...totals,
        };
  run.record(terminalEvent(outcome));
  // The caller learns the outcome (a supervisor, a person) only once it is stored.
  run.commitJournal();
  return outcome;
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
