/**
 * The targets every figure is checked against, in one place: the registry (which names them when a
 * benchmark fails or is skipped) and the benchmarks (which compute `meets`) both read them here,
 * so the two cannot drift apart. These are issue 22's targets; `projection` and `tokens` keep the
 * ones their own issues set.
 */
import { type Comparison, type Figure, figure, untargeted } from './figures.ts';

/** One target: the figure's value compared with `bound` by `op`. */
export interface Target {
  readonly op: Comparison;
  readonly bound: number;
}

/** Every targeted figure. A figure not listed here is reported without a target. */
export const TARGETS: Readonly<Record<string, Target>> = {
  'projection.speedupVsNaive': { op: '>=', bound: 50 },
  'tokens.repeatedChars200kMs': { op: '<', bound: 100 },
  /** Threads at least 1.5x the in-process throughput (N = 1,000 x 8 rounds, 2 threads). */
  'fanout.overhead': { op: '<=', bound: 0.67 },
  'fanout.agentRoundsPerSec': { op: '>=', bound: 10_000 },
  'fanout.latencyEfficiency': { op: '<=', bound: 1.25 },
  'routing.instructionP50Us': { op: '<=', bound: 150 },
  /** 32 KiB. */
  'memory.waitingAgentBytes': { op: '<=', bound: 32 * 1024 },
  'peer.openaiAgentsRatio': { op: '<=', bound: 0.2 },
  'scaleout.redisVsThreads': { op: '<=', bound: 1.5 },
};

/** The target of `name` as the table and the JSON show it (`<= 0.67`), or null without one. */
export function targetText(name: string): string | null {
  const target = TARGETS[name];
  return target === undefined ? null : `${target.op} ${target.bound}`;
}

/** `value` as the figure `name`, checked against its target when it has one. */
export function checked(name: string, value: number, unit: string, digits = 2): Figure {
  const target = TARGETS[name];
  return target === undefined
    ? untargeted(value, unit, digits)
    : figure(value, unit, target.op, target.bound, digits);
}
