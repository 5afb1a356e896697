/**
 * What the in-process baseline runs (bench/support/workload.ts, `runInProcess`): the loop, the
 * journal, the tools and the simulated model, in one module that workload.ts imports from its
 * esbuild bundle, as the actor hosts run theirs (see `inProcessLoop` there).
 */
export { JournalWriter } from '../../src/journal/writer.ts';
export { runAgent } from '../../src/loop/run-agent.ts';
export { SimulatedProvider } from '../../src/providers/simulated.ts';
export { createToolRegistry } from '../../src/tools/builtin/index.ts';
export { noopTool } from '../fixtures/noop-tool.ts';
