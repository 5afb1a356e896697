/**
 * Approvals during a fan-out session: every request of the session's agents goes to its approver
 * (a terminal prompt, `--approve` rules, or a denial when there is nobody to ask), every decision
 * becomes a run event and a line of `approvals.jsonl`.
 */
import type { ApprovalDecision, ApprovalRequest } from '../protocol/approvals.ts';
import type { Supervisor } from '../supervisor/supervisor.ts';
import { type ApprovalRecord, appendApproval } from './approvals.ts';
import type { RunEventSink } from './run-events.ts';

/** An approver's answer to one request. */
export type ApprovalAnswer =
  | {
      readonly approved: true;
      readonly remember?: 'call' | 'session';
      /** `person` (someone answered) or `rule` (an `--approve` rule did). */
      readonly by: 'person' | 'rule';
      readonly decider: string;
    }
  | {
      readonly approved: false;
      readonly reason?: string;
      readonly by: 'person' | 'rule';
      readonly decider: string;
    };

/** Decides the requests of a session's agents. */
export interface SessionApprover {
  /** A request waits: call `answer` once, now or later. */
  ask(request: ApprovalRequest, answer: (answer: ApprovalAnswer) => void): void;
  /** The request was decided (by anyone, or by its timeout) or its agent ended: stop asking. */
  forget(requestId: string): void;
  /** The session is over. */
  close(): void;
}

/** Denies every request: a session with no terminal to ask and no `--approve` rules. */
export const DENY_UNATTENDED: SessionApprover = {
  ask: (_request, answer) =>
    answer({
      approved: false,
      by: 'rule',
      decider: 'no terminal',
      reason: 'this run has no terminal to ask; allow the call with --allow or approve it with --approve',
    }),
  forget: () => {},
  close: () => {},
};

/** Identifies an agent in run events and records. */
export type AgentRefOf = (agentId: string) => { agentId: string; index: number | null; agent: string };

/**
 * Wires `supervisor`'s approvals to `approver`, run events and the run directory `root`
 * (`approvals.jsonl`). `skip` leaves out agents the session does not report (judges).
 */
export function listenForApprovals(
  supervisor: Supervisor,
  options: {
    readonly approver: SessionApprover;
    readonly root: string;
    readonly ref: AgentRefOf;
    readonly emit: RunEventSink;
    readonly skip: (agentId: string) => boolean;
  },
): void {
  const { approver, ref, emit } = options;
  const requests = new Map<string, ApprovalRequest>();
  supervisor.on('agent:approval', ({ request }) => {
    requests.set(request.requestId, request);
    if (!options.skip(request.agentId)) emit({ type: 'approval', ...ref(request.agentId), request });
    approver.ask(request, (answer) => {
      const decided = answer.approved
        ? supervisor.approve(request.requestId, {
            ...(answer.remember === undefined ? {} : { remember: answer.remember }),
            by: answer.by,
            decider: answer.decider,
          })
        : supervisor.deny(request.requestId, answer.reason, { by: answer.by, decider: answer.decider });
      decided.catch(() => {
        // Decided meanwhile (its timeout), or its agent ended: the decision event says which.
      });
    });
  });
  supervisor.on('agent:decision', (event) => {
    // A request a remembered rule settled was never announced: the decision event carries it.
    const request =
      (event.requestId === undefined ? undefined : requests.get(event.requestId)) ?? event.request;
    if (event.requestId !== undefined) {
      requests.delete(event.requestId);
      approver.forget(event.requestId);
    }
    const record = recordOf(ref(event.agentId), event, request);
    appendApproval(options.root, record);
    if (!options.skip(event.agentId)) {
      emit({
        type: 'decision',
        ...ref(event.agentId),
        requestId: event.requestId ?? null,
        tool: event.tool,
        rule: event.rule,
        decision: event.decision,
      });
    }
  });
  const forgetAgent = ({ agentId }: { agentId: string }): void => {
    for (const [requestId, request] of requests) {
      if (request.agentId !== agentId) continue;
      requests.delete(requestId);
      approver.forget(requestId);
    }
  };
  supervisor.on('agent:completed', forgetAgent);
  supervisor.on('agent:failed', forgetAgent);
}

function recordOf(
  agent: { agentId: string; index: number | null; agent: string },
  event: {
    readonly requestId: string | undefined;
    readonly callId: string;
    readonly tool: string;
    readonly rule: string;
    readonly decision: ApprovalDecision;
  },
  request: ApprovalRequest | undefined,
): ApprovalRecord {
  const { decision } = event;
  return {
    agentId: agent.agentId,
    agent: agent.agent,
    index: agent.index,
    ...(event.requestId === undefined ? {} : { requestId: event.requestId }),
    callId: event.callId,
    tool: event.tool,
    ...(request === undefined
      ? {}
      : { args: request.args, asked: request.reason, requestedAt: request.requestedAt }),
    rule: event.rule,
    approved: decision.approved,
    by: decision.by,
    ...(decision.decider === undefined ? {} : { decider: decision.decider }),
    ...(decision.reason === undefined ? {} : { reason: decision.reason }),
    ...(decision.remember === undefined ? {} : { remember: decision.remember }),
    decidedAt: new Date().toISOString(),
  };
}
