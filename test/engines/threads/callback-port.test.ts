import { describe, expect, it } from 'vitest';
import { CallbackServer } from '../../../src/engines/threads/callback-server.ts';
import { UserError } from '../../../src/errors.ts';
import type {
  AdmissionEndpoint,
  HostCallMessage,
  HostCallReplyMessage,
  SupervisorCallbackApi,
} from '../../../src/protocol/messages.ts';
import { CallbackClient } from '../../../workers/callback-client.ts';

/** One event-loop turn: a setImmediate flush runs. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A host's callback port pair whose messages wait until the test delivers them, cloned. */
function link(api: SupervisorCallbackApi) {
  const up: HostCallMessage[] = [];
  const down: HostCallReplyMessage[] = [];
  let toServer: (message: HostCallMessage) => void = () => {};
  let toClient: (message: HostCallReplyMessage) => void = () => {};
  const hostEnd: AdmissionEndpoint<HostCallReplyMessage, HostCallMessage> = {
    postMessage: (message) => up.push(structuredClone(message)),
    on: (_event, listener) => {
      toClient = listener;
    },
  };
  const mainEnd: AdmissionEndpoint<HostCallMessage, HostCallReplyMessage> = {
    postMessage: (message) => down.push(structuredClone(message)),
    on: (_event, listener) => {
      toServer = listener;
    },
  };
  const client = new CallbackClient(hostEnd);
  const server = new CallbackServer(mainEnd, api);
  return {
    client,
    server,
    up,
    down,
    async toMain(): Promise<void> {
      await turn();
      for (const message of up.splice(0)) toServer(message);
    },
    async toHost(): Promise<void> {
      await turn();
      for (const message of down.splice(0)) toClient(message);
    },
  };
}

const api = (overrides: Partial<SupervisorCallbackApi> = {}): SupervisorCallbackApi => ({
  reportRateLimit: () => {},
  completeTask: async (agentId) => ({ accepted: agentId !== 'late', message: 'The agent was cancelled.' }),
  callHostTool: async (_agentId, name) => ({ ok: true, text: `ran ${name}` }),
  toolSpan: async () => undefined,
  ...overrides,
});

describe('the callback port', () => {
  it('the calls of one turn go up in one message and their answers come down in one', async () => {
    const pair = link(api());
    const first = pair.client.completeTask('a', { done: 1 });
    const second = pair.client.completeTask('late', { done: 2 });
    const tool = pair.client.callHostTool('a', 'spawn_agent', { agent: 'x' });
    await pair.toMain();
    expect(pair.up).toHaveLength(0);
    await turn();
    expect(pair.down).toHaveLength(1);
    expect(pair.down[0]?.replies).toHaveLength(3);
    await pair.toHost();
    await expect(first).resolves.toMatchObject({ accepted: true });
    await expect(second).resolves.toEqual({ accepted: false, message: 'The agent was cancelled.' });
    await expect(tool).resolves.toEqual({ ok: true, text: 'ran spawn_agent' });
    expect(pair.client.pending).toBe(0);
  });

  it('an error thrown on the supervisor rejects the call on the host with its code and fields', async () => {
    const pair = link(
      api({
        callHostTool: async (agentId) => {
          throw new UserError('agent_not_running', `Agent ${agentId} is not running`, { agentId });
        },
      }),
    );
    const call = pair.client.callHostTool('gone', 'await_agents', {});
    await pair.toMain();
    await pair.toHost();
    await expect(call).rejects.toMatchObject({ code: 'agent_not_running', fields: { agentId: 'gone' } });
  });

  it('a rate-limit report resolves only once the supervisor has run it', async () => {
    const reports: [string, number][] = [];
    const pair = link(api({ reportRateLimit: (key, ms) => void reports.push([key, ms]) }));
    let settled = false;
    const report = pair.client.reportRateLimit('openai', 500).then(() => {
      settled = true;
    });
    await turn();
    expect(settled).toBe(false);
    await pair.toMain();
    expect(reports).toEqual([['openai', 500]]);
    await pair.toHost();
    await report;
    expect(settled).toBe(true);
  });

  it('a closed server answers nothing', async () => {
    const pair = link(api());
    void pair.client.completeTask('a', {});
    pair.server.close();
    await pair.toMain();
    await turn();
    expect(pair.down).toHaveLength(0);
  });
});
