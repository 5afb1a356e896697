/**
 * The LangGraph.js side of the peer benchmark does the workload it is compared on: every agent of a
 * concurrent batch makes its own R `noop` calls and then answers, and a run that stops short is
 * counted as unfinished (so the benchmark throws instead of timing it).
 */
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { langgraphAgents, unfinishedLangGraphRuns } from '../../bench/fixtures/langgraph-model.ts';

describe('peer benchmark, LangGraph.js side', () => {
  it('runs concurrent agents through the ReAct graph, each doing all its tool rounds and answering', async () => {
    const runs = await langgraphAgents(3)(5);
    expect(runs).toHaveLength(5);
    for (const messages of runs) {
      expect(messages.filter((m) => ToolMessage.isInstance(m)).map((m) => m.content)).toEqual([
        'ok',
        'ok',
        'ok',
      ]);
      expect(messages.at(-1)?.content).toBe('done after 3 tool results');
    }
    expect(unfinishedLangGraphRuns(runs, 3)).toBe(0);
  });

  it('counts a run that stopped short of its rounds or its answer as unfinished', () => {
    const call = (id: string) => new AIMessage({ content: '', tool_calls: [{ id, name: 'noop', args: {} }] });
    const done = [
      new HumanMessage('task'),
      call('c0'),
      new ToolMessage({ content: 'ok', tool_call_id: 'c0' }),
      new AIMessage('done after 1 tool results'),
    ];
    const noAnswer = [
      new HumanMessage('task'),
      call('c0'),
      new ToolMessage({ content: 'ok', tool_call_id: 'c0' }),
    ];
    expect(unfinishedLangGraphRuns([done, noAnswer], 1)).toBe(1);
    // One round where two were due: short of its rounds, whatever it answered.
    expect(unfinishedLangGraphRuns([done], 2)).toBe(1);
  });
});
