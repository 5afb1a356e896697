/**
 * What a worker process builds for the agents it runs: tool registries (built-ins, imported tool
 * modules, host-tool proxies over Redis) and providers wired to the shared admission. Modules are
 * imported once per process; registries are cached per job shape.
 *
 * Every tool that may change something outside the agent (`readOnly: false`) first waits for the
 * agent's journal to be acknowledged by Redis: its ToolCall event must be durable before it runs,
 * so that a worker death can never make the resumed agent run it again unknowingly.
 */
import type { Redis } from 'ioredis';
import { registerMcpCredentials } from '../../mcp/config.ts';
import { McpPool, type McpToolSource } from '../../mcp/pool.ts';
import { extend } from '../../objects.ts';
import type { ProviderConfig } from '../../protocol/messages.ts';
import type { AgentJobData } from '../../protocol/redis.ts';
import type { Provider, ProviderHooks } from '../../providers/types.ts';
import { createToolRegistry } from '../../tools/builtin/index.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import type { Tool, ToolContext } from '../../tools/types.ts';
import { hostToolProxies, loadToolModules, ModuleLoader, providerFromConfig } from '../actor/resources.ts';
import type { BlockingPool } from './blocking-pool.ts';
import { callHostTool } from './host-calls.ts';
import type { ScaleoutKeys } from './keys.ts';

/**
 * Tool registries a worker keeps for later jobs, the least recently used dropped first. A
 * long-running worker serves supervisors that come and go; a dropped registry is only rebuilt
 * (its modules stay imported), and the jobs running with it keep it.
 */
export const MAX_CACHED_REGISTRIES = 64;

/** Waits until the agent's journal so far is acknowledged; rejects when it can take no more. */
export type JournalBarrier = (agentId: string) => Promise<void>;

interface ResourceOptions {
  /** Imports tool and provider modules (the worker's tells its SecretForwarder what they register). */
  readonly modules?: ModuleLoader;
  readonly redis: Redis;
  readonly pool: BlockingPool;
  readonly keys: ScaleoutKeys;
  readonly barrier: JournalBarrier;
}

/** A worker's tool and provider factory. */
export class WorkerResources {
  readonly #options: ResourceOptions;
  readonly #modules: ModuleLoader;
  readonly #registries = new Map<string, Promise<ToolRegistry>>();
  /** This worker process's MCP connections, shared by its agents. */
  readonly #mcp = new McpPool({ cwd: process.cwd() });

  constructor(options: ResourceOptions) {
    this.#options = options;
    this.#modules = options.modules ?? new ModuleLoader();
  }

  /**
   * The tool registry for a job's tool modules and host tools. A supervisor sends the same ones in
   * every job (src/protocol/redis.ts), so the key is the supervisor, its modules and its host
   * tools' names and kinds: the whole declarations as JSON (schemas, ~2 KB) cost a worker ~1-3 %
   * of its CPU when stringified per job.
   */
  registry(data: AgentJobData): Promise<ToolRegistry> {
    const modules = data.toolModules.map((ref) => `${ref.module}#${ref.export ?? ''}`).join('\n');
    const tools = data.hostTools
      .map((tool) => `${tool.name}:${tool.readOnly ? 'r' : 'w'}${tool.needsApproval === true ? 'a' : ''}`)
      .join(',');
    const key = `${data.supervisorId}\n${tools}\n${modules}`;
    const cached = this.#registries.get(key);
    if (cached) {
      // Most recently used last: a Map iterates in insertion order.
      this.#registries.delete(key);
      this.#registries.set(key, cached);
      return cached;
    }
    const registry = this.#buildRegistry(data);
    this.#registries.set(key, registry);
    registry.catch(() => {
      if (this.#registries.get(key) === registry) this.#registries.delete(key);
    });
    if (this.#registries.size > MAX_CACHED_REGISTRIES) {
      const oldest = this.#registries.keys().next();
      if (!oldest.done) this.#registries.delete(oldest.value);
    }
    return registry;
  }

  async #buildRegistry(data: AgentJobData): Promise<ToolRegistry> {
    const { redis, pool, keys } = this.#options;
    const registry = createToolRegistry([
      ...(await loadToolModules(data.toolModules, this.#modules)),
      ...hostToolProxies(data.hostTools, (agentId, name, args, signal, callId) =>
        callHostTool(
          redis,
          pool,
          keys,
          data.supervisorId,
          { agentId, name, args, ...(callId === undefined ? {} : { callId }) },
          signal,
          // The same in every job of one supervisor, as the registry is.
          { beats: data.supervisorBeats === true },
        ),
      ),
    ]);
    for (const tool of registry.list()) {
      if (!tool.readOnly) registry.replace(this.#afterJournal(tool));
    }
    return registry;
  }

  /**
   * MCP tools for this worker's agents: the process's connections, with every tool that may
   * change something waiting for the journal first, as built-in tools do.
   */
  mcp(): McpToolSource {
    return {
      toolsFor: async (servers, signal) => {
        // A connection another supervisor's run started registered its credentials then, for that
        // one: registered again here, they are this run's supervisor's too (secret-forwarder.ts).
        try {
          registerMcpCredentials(servers);
        } catch {
          // Too many to mask: starting the server refuses it the same way.
        }
        const set = await this.#mcp.toolsFor(servers, signal);
        return { ...set, tools: set.tools.map((tool) => (tool.readOnly ? tool : this.#afterJournal(tool))) };
      },
    };
  }

  /** Stops this worker's MCP servers. */
  close(): Promise<void> {
    return this.#mcp.close();
  }

  #afterJournal(tool: Tool): Tool {
    const barrier = this.#options.barrier;
    return extend(tool, {
      execute: async (args: Record<string, unknown>, ctx: ToolContext) => {
        await barrier(ctx.agentId);
        return tool.execute(args, ctx);
      },
    });
  }

  /** A provider for one agent run, with the run's admission and rate-limit hooks. */
  provider(config: ProviderConfig, hooks: ProviderHooks): Promise<Provider> {
    return providerFromConfig(config, hooks, this.#modules);
  }
}
