/**
 * What an agent's runner builds where the agent runs, the same in an actor host (a worker thread)
 * and in a redis worker: tool modules imported by path and checked, host tools as proxies that call
 * the supervisor, and providers built from their description. Closures cannot cross a thread or a
 * process, so the supervisor describes all three and this module makes them real.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { UserError } from '../../errors.ts';
import { importModule } from '../../module-import.ts';
import { extend } from '../../objects.ts';
import type { HostToolDeclaration, ProviderConfig, ToolModuleRef } from '../../protocol/messages.ts';
import { createProvider } from '../../providers/factory.ts';
import type { Provider, ProviderHooks } from '../../providers/types.ts';
import type { Tool, ToolContext, ToolOutcome } from '../../tools/types.ts';

/** Imports modules by path or file URL, once each per loader. */
export class ModuleLoader {
  readonly #modules = new Map<string, Promise<Record<string, unknown>>>();

  /** The module's namespace; a failed import is forgotten, so a later call tries again. */
  load(specifier: string): Promise<Record<string, unknown>> {
    const url = specifier.startsWith('file:') ? specifier : pathToFileURL(path.resolve(specifier)).href;
    let mod = this.#modules.get(url);
    if (!mod) {
      mod = importModule(url);
      this.#modules.set(url, mod);
      mod.catch(() => this.#modules.delete(url));
    }
    return mod;
  }
}

/**
 * The module at `specifier`, or UserError `invalid_provider_module` / `invalid_tool_module` naming
 * it and why it did not import: Node's own message named troupe's importing file, not the option.
 */
async function loadOrExplain(
  loader: ModuleLoader,
  specifier: string,
  kind: 'provider' | 'tool',
): Promise<Record<string, unknown>> {
  try {
    return await loader.load(specifier);
  } catch (cause) {
    const message = (cause instanceof Error ? cause.message : String(cause)).replace(
      / imported from \S+$/,
      '',
    );
    // An installed troupe on Node 20 imports modules with Node's own loader, in threads a
    // `--import tsx` of the main thread does not reach: say what works instead of only Node's words.
    const typescript =
      (cause as { code?: unknown } | undefined)?.code === 'ERR_UNKNOWN_FILE_EXTENSION' &&
      /\.[cm]?tsx?$/.test(specifier)
        ? '; give it as JavaScript (.js or .mjs, e.g. compiled with tsc): this Node cannot import TypeScript in the threads agents run in (docs/install.md)'
        : '';
    throw new UserError(
      kind === 'provider' ? 'invalid_provider_module' : 'invalid_tool_module',
      `Could not import the ${kind} module ${specifier}: ${message}${typescript}`,
      { module: specifier },
      { cause },
    );
  }
}

/**
 * The tools of every module in `refs`. Throws UserError `invalid_tool_module` when an export is
 * not a Tool or an array of Tools.
 */
export async function loadToolModules(refs: readonly ToolModuleRef[], loader: ModuleLoader): Promise<Tool[]> {
  const tools: Tool[] = [];
  for (const ref of refs) {
    const name = ref.export ?? 'default';
    const exported = (await loadOrExplain(loader, ref.module, 'tool'))[name];
    for (const tool of Array.isArray(exported) ? exported : [exported]) {
      if (typeof tool !== 'object' || tool === null || typeof (tool as Tool).execute !== 'function') {
        throw new UserError(
          'invalid_tool_module',
          `Expected ${ref.module} to export a Tool or an array of Tools as \`${name}\``,
          { module: ref.module },
        );
      }
      tools.push(tool as Tool);
    }
  }
  return tools;
}

/** Calls a host tool on the supervisor for `agentId`; resolves with its outcome. */
export type HostToolCall = (
  agentId: string,
  name: string,
  args: Readonly<Record<string, unknown>>,
  signal: AbortSignal,
  callId: string | undefined,
) => Promise<ToolOutcome>;

/** Tools that forward each call of a declared host tool to the supervisor. */
export function hostToolProxies(declarations: readonly HostToolDeclaration[], call: HostToolCall): Tool[] {
  return declarations.map((declaration) =>
    extend(declaration, {
      // Host tools run on the supervisor (`await_agents` waits for subagents by design), which
      // times them: the thread times a user's host tool only by its definition's
      // `toolConfig.<tool>.timeoutMs`, and never an orchestration tool (src/tools/toolbox.ts).
      timeoutMs: 0,
      execute: (args: Record<string, unknown>, ctx: ToolContext) =>
        call(ctx.agentId, declaration.name, args, ctx.signal, ctx.callId),
    }),
  );
}

/**
 * The provider `config` describes, with `hooks` (admission, rate-limit reports) added to its
 * options. Throws UserError `invalid_provider_module` when a module exports no factory.
 */
export async function providerFromConfig(
  config: ProviderConfig,
  hooks: ProviderHooks,
  loader: ModuleLoader,
): Promise<Provider> {
  const options = { ...(config.options ?? {}), ...hooks };
  if (config.kind !== 'module') return createProvider(config.kind, options);
  const factory = (await loadOrExplain(loader, config.module, 'provider'))[config.export ?? 'default'];
  if (typeof factory !== 'function') {
    throw new UserError('invalid_provider_module', `${config.module} does not export a provider factory`, {
      module: config.module,
    });
  }
  return (factory as (options: unknown) => Provider)(options);
}
