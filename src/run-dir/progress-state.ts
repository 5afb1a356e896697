/** Live counts of a fan-out session, folded from its run events, for the progress displays. */
import { LINE_EXCERPT_CHARS } from './constants.ts';
import { excerpt, printable } from './format.ts';
import { outcomeText } from './results.ts';
import type { RunEvent } from './run-events.ts';

/** What the display knows about one agent. */
export interface AgentProgress {
  readonly agentId: string;
  readonly agent: string;
  state: 'queued' | 'running' | 'ended';
  /** Events seen from it: how busy it is. */
  activity: number;
  latest: string;
  round: number;
}

/** Counts and totals of a session so far. */
export class ProgressState {
  runId = '';
  runDir = '';
  provider = '';
  simulated = false;
  notice: string | undefined;
  /** Agents this session runs, plus the ones agents spawned. */
  total = 0;
  completed = 0;
  failed = 0;
  running = 0;
  inputTokens = 0;
  outputTokens = 0;
  costUsd = 0;
  /** Some input counts were estimated (a server reported none, or no readable input count). */
  inputEstimated = false;
  /** Some output counts were estimated. */
  outputEstimated = false;
  /** Some agent's model has no known price: the cost shown is a lower bound. */
  costUnknown = false;
  /** The run's token budget (0 = unlimited) and the tokens earlier sessions used. */
  maxRunTokens = 0;
  priorTokens = 0;
  interrupted = false;
  /**
   * A Ctrl-C or the spent budget stopped the run: the entries not started yet are not spawned
   * any more, so they are shown as not run rather than queued.
   */
  stopped = false;
  backend: 'threads' | 'redis' = 'threads';
  /** Worker threads the run starts, and how many of them are ready. */
  threads = 0;
  threadsReady = 0;
  /** True once any agent has started: the start-up phase is over. */
  agentStarted = false;
  readonly startedAt: number;
  readonly agents = new Map<string, AgentProgress>();

  constructor(now: number) {
    this.startedAt = now;
  }

  get queued(): number {
    return Math.max(0, this.total - this.completed - this.failed - this.running);
  }

  get finished(): number {
    return this.completed + this.failed;
  }

  /** Agents finished per second so far. */
  rate(now: number): number {
    const seconds = (now - this.startedAt) / 1000;
    return seconds > 0 ? this.finished / seconds : 0;
  }

  /** Estimated milliseconds until every agent has finished; undefined before the first one has. */
  etaMs(now: number): number | undefined {
    const rate = this.rate(now);
    if (rate === 0) return undefined;
    return ((this.total - this.finished) / rate) * 1000;
  }

  /**
   * What the run is doing before its first agent starts (threads starting, or waiting for Redis
   * workers), or undefined once agents run: the display says it instead of showing a still 0/N.
   */
  get startup(): string | undefined {
    if (this.agentStarted || this.total === 0) return undefined;
    if (this.backend === 'redis') return 'waiting for a troupe worker to take the first agent';
    if (this.threadsReady < this.threads)
      return `starting ${this.threads} worker thread(s): ${this.threadsReady} ready`;
    return 'starting the first agents';
  }

  /** Running agents, busiest first. */
  busiest(count: number): AgentProgress[] {
    return [...this.agents.values()]
      .filter((agent) => agent.state === 'running')
      .sort((a, b) => b.activity - a.activity)
      .slice(0, count);
  }

  apply(event: RunEvent): void {
    switch (event.type) {
      case 'run':
        this.runId = event.runId;
        this.runDir = event.runDir;
        this.provider = event.provider;
        this.simulated = event.simulated;
        this.notice = event.notice;
        this.total = event.toRun;
        this.maxRunTokens = event.runLimits.maxTotalTokens;
        this.priorTokens = event.usedTokens;
        this.backend = event.engine.backend;
        this.threads = event.engine.backend === 'threads' ? event.engine.threads : 0;
        return;
      case 'spawned': {
        if (event.index === null) this.total += 1;
        this.agents.set(event.agentId, {
          agentId: event.agentId,
          agent: event.agent,
          state: 'queued',
          activity: 0,
          latest: 'queued',
          round: 0,
        });
        return;
      }
      case 'started': {
        this.agentStarted = true;
        const agent = this.agents.get(event.agentId);
        if (agent && agent.state === 'queued') {
          agent.state = 'running';
          this.running += 1;
        }
        this.#touch(
          event.agentId,
          event.resumed ? 'resumed from its journal' : `started on thread ${event.hostId}`,
        );
        return;
      }
      case 'round': {
        const agent = this.agents.get(event.agentId);
        if (agent) agent.round = event.round;
        this.#touch(event.agentId, `round ${event.round}`);
        return;
      }
      case 'tool':
        this.#touch(
          event.agentId,
          event.ok === undefined ? `${event.tool} ...` : `${event.tool} ${event.ok ? 'ok' : 'failed'}`,
        );
        return;
      case 'usage':
        this.inputTokens += event.inputTokens;
        this.outputTokens += event.outputTokens;
        this.costUsd += event.costUsd ?? 0;
        if (event.estimated) {
          this.inputEstimated ||= event.estimatedSide !== 'output';
          this.outputEstimated ||= event.estimatedSide !== 'input';
        }
        this.costUnknown ||= event.costUsd === null;
        return;
      case 'text':
        this.#touch(event.agentId, excerpt(event.text, LINE_EXCERPT_CHARS));
        return;
      case 'waiting':
        this.#touch(event.agentId, 'waiting for an instruction');
        return;
      case 'instructed':
        this.#touch(event.agentId, `instructed: ${excerpt(event.text, LINE_EXCERPT_CHARS)}`);
        return;
      case 'restarted':
        this.#touch(event.agentId, `restarted (${event.restart}) after a thread crash`);
        return;
      case 'ended': {
        const { line } = event;
        const agent = this.agents.get(line.agentId);
        if (agent?.state === 'running') this.running -= 1;
        if (agent) {
          agent.state = 'ended';
          agent.latest = excerpt(outcomeText(line), LINE_EXCERPT_CHARS);
        }
        if (line.status === 'completed') this.completed += 1;
        else this.failed += 1;
        return;
      }
      case 'interrupt':
        this.interrupted = true;
        this.stopped = true;
        return;
      case 'budget':
        this.stopped = true;
        return;
      case 'thread':
        if (event.event === 'started') this.threadsReady += 1;
        return;
      default:
        return;
    }
  }

  #touch(agentId: string, latest: string): void {
    const agent = this.agents.get(agentId);
    if (!agent) return;
    agent.activity += 1;
    agent.latest = printable(latest);
  }
}
