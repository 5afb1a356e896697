/**
 * An agent's toolbox: the registry seen through its definition's policy and name overrides. It
 * gives the provider its tool specs and runs the model's calls, re-checking the policy each time.
 */
import path from 'node:path';
import { DEFAULT_TOOL_RETRY, DEFAULT_TOOL_TIMEOUT_MS, MAX_TOOL_RESULT_CHARS } from '../constants.ts';
import { checkDefinitionNumbers } from '../definition/number-ranges.ts';
import type { AgentDefinition, RetryPolicy } from '../definition/types.ts';
import { describeValue, UserError } from '../errors.ts';
import { extend } from '../objects.ts';
import type { ApprovalDecision } from '../protocol/approvals.ts';
import { NEVER_RETRIED_TOOL_NAMES, ORCHESTRATION_TOOL_NAMES } from './builtin/orchestration.ts';
import { buildParamMapping, type ParamMapping } from './params.ts';
import {
  type AgentPermissions,
  buildPermissionGate,
  denialText,
  effectiveMode,
  type PermissionGate,
} from './permissions.ts';
import { buildToolPolicy, type ToolPolicy } from './policy.ts';
import type { ToolRegistry } from './registry.ts';
import { TOOL_NAME_PATTERN } from './registry.ts';
import { backoffDelay, sleep as defaultSleep, type Sleep } from './retry.ts';
import { describeProblems } from './schema.ts';
import type { PromptTools, Tool, ToolContext, ToolOutcome, ToolSpec } from './types.ts';

/** The part of a definition the toolbox reads. */
export type ToolboxDefinition = Pick<
  AgentDefinition,
  | 'tools'
  | 'disallowedTools'
  | 'permissionMode'
  | 'toolNameOverrides'
  | 'paramNameOverrides'
  | 'toolConfig'
  | 'bash'
> &
  Partial<Pick<AgentDefinition, 'permissions'>>;

const NO_SETTINGS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = Object.freeze({});

/** Options of {@link buildToolbox}: where the agent's tools work, and what they are given. */
export interface ToolboxOptions {
  /** The agent's working directory; file tools are confined to it. */
  readonly cwd: string;
  /** Where `/path` rules (`Read(/src/**)`) start. @default cwd */
  readonly projectRoot?: string;
  /** Where `~/path` rules start. @default os.homedir() */
  readonly home?: string;
  /** The agent the tools run for, given to every tool as `ctx.agentId`. */
  readonly agentId: string;
  /** Values of the agent's settings blocks, by block id: given to every tool as `ctx.settings`. @default {} */
  readonly settings?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Waits between retries. @default a timer that stops on abort */
  readonly sleep?: Sleep;
  /** Jitter source for retry delays. @default Math.random */
  readonly random?: () => number;
  /** Permissions besides the definition's (supervisor, plan, command line). @default none */
  readonly permissions?: AgentPermissions;
}

/** A call the permission gate asks a person about (see {@link ToolCallOptions.approve}). */
export interface ApprovalAsk {
  /** Canonical tool name. */
  readonly tool: string;
  readonly modelName: string;
  /** The arguments as the model gave them (model-facing parameter names). */
  readonly modelArgs: Readonly<Record<string, unknown>>;
  /** The validated arguments the tool would receive (canonical parameter names). */
  readonly args: Readonly<Record<string, unknown>>;
  /** The rule that asked (see PermissionVerdict). */
  readonly rule: string;
  readonly reason: string;
}

/** The outcome of a model's tool call, with the canonical name it resolved to. */
export type ToolCallResult = ToolOutcome & {
  /** `undefined` when the model-facing name matched no admitted tool. */
  readonly canonicalName: string | undefined;
  /** How many times `execute` ran: 0 when the call was refused or its arguments were invalid. */
  readonly attempts: number;
  /**
   * Set when permissions kept the call from running: a `deny` rule or the mode (`asked: false`),
   * or a decision on its approval (`asked: true`).
   */
  readonly denied?: { readonly rule: string; readonly reason: string; readonly asked: boolean };
};

/** Options of {@link Toolbox.call}. */
export interface ToolCallOptions {
  readonly signal?: AbortSignal;
  /** The model's id of the call, given to the tool as `ctx.callId`. */
  readonly callId?: string;
  /** Given to the tool as `ctx.fitsState`. @default every update fits */
  readonly fitsState?: (key: string, text: string | null) => boolean;
  /**
   * Answers the call instead of running it: asked once every check has passed (policy, arguments,
   * rules), just before the tool would run, with the tool and its canonical arguments. An outcome
   * is the call's outcome (`attempts` 0); undefined lets the tool run. A replay answers recorded
   * calls here (src/replay/replay-calls.ts).
   */
  readonly answer?: (tool: Tool, args: Readonly<Record<string, unknown>>) => ToolOutcome | undefined;
  /**
   * Decides a call the permission gate asks about; the agent loop journals the request, waits for a
   * person and journals the decision. Without it an asked call runs: the caller of `call` is then
   * the one deciding (`deny` rules and `dontAsk` apply regardless).
   */
  readonly approve?: (ask: ApprovalAsk) => Promise<ApprovalDecision>;
  /** Given to the tool as `ctx.traceContext`. */
  readonly traceContext?: ToolContext['traceContext'];
}

/** An agent's view of the tools: specs for the provider and a policy-checked `call`. */
export interface Toolbox {
  /** Admitted tools as the provider should offer them: model-facing tool and parameter names. */
  readonly specs: readonly ToolSpec[];
  /** Admitted tools by canonical name. */
  readonly admitted: ReadonlyMap<string, Tool>;
  readonly promptTools: PromptTools;
  /** The model-facing name of an admitted tool. */
  modelName(canonical: string): string | undefined;
  /** The canonical name behind a model-facing name of an admitted tool. */
  canonicalName(modelName: string): string | undefined;
  /** Decides calls by the agent's permission rules and mode. */
  readonly permissions: PermissionGate;
  /**
   * Runs a model's tool call: maps names back, re-checks the policy, validates the arguments,
   * checks the call against the definition's rules (`Bash(git diff:*)`), then executes with the
   * tool's retry policy. Never throws: every problem is a failed outcome.
   */
  call(modelName: string, rawArgs: unknown, options?: ToolCallOptions): Promise<ToolCallResult>;
}

/**
 * Builds an agent's toolbox. Throws UserError `tool_name_conflict` when two admitted tools would
 * share a model-facing name, `invalid_tool` for an override providers would reject, and the errors
 * of {@link buildParamMapping} for bad `paramNameOverrides`, and `invalid_definition` for a
 * `bash` or `toolConfig` number out of its range (one built in code: `bash.outputByteLimit` past
 * `MAX_BASH_OUTPUT_BYTE_LIMIT`; see docs/definitions.md).
 */
export function buildToolbox(
  def: ToolboxDefinition,
  registry: ToolRegistry,
  options: ToolboxOptions,
): Toolbox {
  checkDefinitionNumbers(def, 'toolbox');
  return new AgentToolbox(def, registry, options);
}

/** A definition's compiled rules for one place (cwd, roots, extra permissions). */
interface CompiledRules {
  readonly policy: ToolPolicy;
  readonly permissions: PermissionGate;
}

/**
 * Compiled rules by definition object, then by where they apply. Neither the policy nor the gate
 * holds anything of one agent (the agent id is an argument of `check`), so the agents of one
 * definition share them instead of each compiling (and keeping) its own. Bounded per definition;
 * a definition that is dropped takes its entries with it.
 */
const compiledRules = new WeakMap<ToolboxDefinition, Map<string, CompiledRules>>();
const RULES_PER_DEFINITION = 16;

function rulesFor(def: ToolboxDefinition, cwd: string, options: ToolboxOptions): CompiledRules {
  const extra = options.permissions ?? {};
  const key = JSON.stringify([cwd, options.projectRoot ?? null, options.home ?? null, extra]);
  let byPlace = compiledRules.get(def);
  const cached = byPlace?.get(key);
  if (cached !== undefined) return cached;
  const roots = {
    cwd,
    ...(options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot }),
    ...(options.home === undefined ? {} : { home: options.home }),
  };
  const rules: CompiledRules = {
    policy: buildToolPolicy(def, roots),
    permissions: buildPermissionGate({
      mode: effectiveMode(def.permissionMode, extra.mode),
      sources: [
        { label: 'permissions', rules: def.permissions ?? {} },
        { label: "the supervisor's permissions", rules: extra },
      ],
      context: { ...roots, modelNames: def.toolNameOverrides },
    }),
  };
  if (byPlace === undefined) {
    byPlace = new Map();
    compiledRules.set(def, byPlace);
  }
  if (byPlace.size >= RULES_PER_DEFINITION) {
    const oldest = byPlace.keys().next();
    if (oldest.done !== true) byPlace.delete(oldest.value);
  }
  byPlace.set(key, rules);
  return rules;
}

/**
 * The toolbox of one agent. A class rather than an object of closures: every parked agent keeps
 * its toolbox, and methods on a prototype cost it nothing.
 */
class AgentToolbox implements Toolbox {
  readonly specs: readonly ToolSpec[];
  readonly admitted: ReadonlyMap<string, Tool>;
  readonly promptTools: PromptTools;
  readonly permissions: PermissionGate;
  readonly #def: ToolboxDefinition;
  readonly #registry: ToolRegistry;
  readonly #policy: ToolPolicy;
  readonly #options: ToolboxOptions;
  readonly #cwd: string;
  readonly #settings: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Model-facing name -> canonical name, of admitted tools. */
  readonly #toCanonical = new Map<string, string>();
  /** Param mappings of tools with `paramNameOverrides` (the others share one per schema). */
  #renamed: Map<Tool, ParamMapping> | undefined;

  constructor(def: ToolboxDefinition, registry: ToolRegistry, options: ToolboxOptions) {
    const cwd = path.resolve(options.cwd);
    const { policy, permissions } = rulesFor(def, cwd, options);
    this.#def = def;
    this.#registry = registry;
    this.#policy = policy;
    this.#options = options;
    this.#cwd = cwd;
    this.#settings = options.settings ?? NO_SETTINGS;
    this.permissions = permissions;
    const overrideOf = (canonical: string): string =>
      Object.hasOwn(def.toolNameOverrides, canonical)
        ? (def.toolNameOverrides[canonical] ?? canonical)
        : canonical;

    const admitted = new Map<string, Tool>();
    const toCanonical = this.#toCanonical;
    // Every registered tool's model-facing name, empty when it is not admitted (prompt variables).
    // fromEntries defines own properties, so even a tool called `__proto__` stays a plain entry.
    const modelNameOf = new Map<string, string>();
    const background: string[] = [];
    for (const tool of registry.list()) {
      modelNameOf.set(tool.name, '');
      if (policy.refusal(tool) !== undefined) continue;
      const model = overrideOf(tool.name);
      if (!TOOL_NAME_PATTERN.test(model)) {
        throw new UserError(
          'invalid_tool',
          `toolNameOverrides.${tool.name}: expected 1-64 letters, digits, \`_\` or \`-\`, got ${JSON.stringify(model)}`,
          { tool: tool.name },
        );
      }
      const clash = toCanonical.get(model);
      if (clash !== undefined) {
        throw new UserError(
          'tool_name_conflict',
          `Tools \`${clash}\` and \`${tool.name}\` would both be offered to the model as \`${model}\``,
          { tool: tool.name, modelName: model },
        );
      }
      admitted.set(tool.name, tool);
      toCanonical.set(model, tool.name);
      modelNameOf.set(tool.name, model);
      if (tool.background) background.push(model);
    }
    const names: Readonly<Record<string, string>> = Object.fromEntries(modelNameOf);
    this.admitted = admitted;
    this.promptTools = { names, background };
    // Pushed, not map()ped: an optimized map() returns a holey array where the interpreter's is
    // packed, and the loop's code optimized on the first specs (submit, the model) deopted on it.
    const specs: ToolSpec[] = [];
    for (const tool of admitted.values()) {
      specs.push({
        name: names[tool.name] ?? tool.name,
        description: tool.description,
        parameters: this.#mappingFor(tool).schema,
      });
    }
    this.specs = specs;
  }

  modelName(canonical: string): string | undefined {
    return this.admitted.has(canonical) ? this.promptTools.names[canonical] : undefined;
  }

  canonicalName(modelName: string): string | undefined {
    return this.#toCanonical.get(modelName);
  }

  #mappingFor(tool: Tool): ParamMapping {
    const overrides = this.#def.paramNameOverrides[tool.name];
    if (overrides === undefined) return buildParamMapping(tool.name, tool.parameters, undefined);
    this.#renamed ??= new Map();
    let mapping = this.#renamed.get(tool);
    if (mapping === undefined) {
      mapping = buildParamMapping(tool.name, tool.parameters, overrides);
      this.#renamed.set(tool, mapping);
    }
    return mapping;
  }

  #unavailable(modelName: string, canonicalName: string | undefined): ToolCallResult {
    const modelNames = [...this.#toCanonical.keys()];
    return {
      ok: false,
      text:
        `Tool \`${modelName}\` is not available. ` +
        (modelNames.length > 0 ? `Available tools: ${modelNames.join(', ')}.` : 'You have no tools.'),
      canonicalName,
      attempts: 0,
    };
  }

  async call(
    modelName: string,
    rawArgs: unknown,
    callOptions: ToolCallOptions = {},
  ): Promise<ToolCallResult> {
    const registry = this.#registry;
    const policy = this.#policy;
    const def = this.#def;
    const canonical = this.#toCanonical.get(modelName);
    // The registry is read again: the policy is checked against the tool that would run now.
    const tool = canonical === undefined ? undefined : registry.get(canonical);
    const validate = canonical === undefined ? undefined : registry.validator(canonical);
    if (canonical === undefined || tool === undefined || validate === undefined) {
      return this.#unavailable(modelName, canonical);
    }
    if (policy.refusal(tool) !== undefined) return this.#unavailable(modelName, canonical);

    const args = rawArgs ?? {};
    if (typeof args !== 'object' || Array.isArray(args)) {
      return failed(canonical, `Invalid arguments for \`${modelName}\`: expected a JSON object`);
    }
    let mapping: ParamMapping;
    try {
      mapping = this.#mappingFor(tool);
    } catch (error) {
      return failed(canonical, `${modelName} failed: ${messageOf(error)}`);
    }
    const mapped = mapping.toCanonical(args as Record<string, unknown>);
    if ('error' in mapped) {
      return failed(canonical, `Invalid arguments for \`${modelName}\`: ${mapped.error}`);
    }
    const problems = validate(mapped.args);
    if (problems.length > 0) {
      const described = describeProblems(mapping.problemsToModel(problems));
      return failed(canonical, `Invalid arguments for \`${modelName}\`: ${described}`);
    }

    const refused = await policy.callRefusal(tool, mapped.args);
    if (refused !== undefined) {
      return failed(canonical, `\`${modelName}\` refused this call: ${refused}. Do not retry it as is.`);
    }

    const answered = callOptions.answer?.(tool, mapped.args);
    if (answered !== undefined) return callResult(answered, canonical, 0);
    const verdict = await this.permissions.check(tool, mapped.args, this.#options.agentId);
    if (verdict.kind === 'deny') {
      return {
        ...failed(canonical, denialText(modelName, { by: 'policy', reason: verdict.reason })),
        denied: { rule: verdict.rule, reason: verdict.reason, asked: false },
      };
    }
    if (verdict.kind === 'ask' && callOptions.approve) {
      const decision = await callOptions.approve({
        tool: canonical,
        modelName,
        modelArgs: args as Record<string, unknown>,
        args: mapped.args,
        rule: verdict.rule,
        reason: verdict.reason,
      });
      if (!decision.approved) {
        return {
          ...failed(canonical, denialText(modelName, decision)),
          denied: { rule: verdict.rule, reason: decision.reason ?? verdict.reason, asked: true },
        };
      }
    }

    const signal = callOptions.signal ?? new AbortController().signal;
    const guard = policy.guard(tool);
    const ctx: ToolContext = {
      signal,
      cwd: this.#cwd,
      agentId: this.#options.agentId,
      ...(callOptions.callId === undefined ? {} : { callId: callOptions.callId }),
      bash: def.bash,
      settings: this.#settings,
      ...(guard === undefined ? {} : { guard }),
      fitsState: callOptions.fitsState ?? fitsAlways,
      ...(callOptions.traceContext === undefined ? {} : { traceContext: callOptions.traceContext }),
    };
    // Returned, not awaited: the checks' locals need not live while the tool runs (a parked
    // agent's wait_for_instruction runs for as long as it is parked).
    const config = def.toolConfig[canonical];
    // Never retried, whatever a definition built without validation says: a retry of a call whose
    // answer was lost could start a second child or send an instruction twice.
    const retry = NEVER_RETRIED_TOOL_NAMES.has(canonical)
      ? DEFAULT_TOOL_RETRY
      : (config?.retry ?? DEFAULT_TOOL_RETRY);
    // The definition's `toolConfig.<tool>.timeoutMs` over the tool's own. An orchestration tool's
    // limit is kept by the supervisor, which knows what a call it abandons did (a child started, an
    // instruction queued): timed here too, the thread told the model "abandoned" while the child
    // it had started ran on unnamed (src/supervisor/orchestration.ts).
    const timeoutMs = ORCHESTRATION_TOOL_NAMES.has(canonical)
      ? 0
      : (config?.timeoutMs ?? tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS);
    if (retry.maxRetries === 0) {
      if (signal.aborted) return failed(canonical, `${modelName} was cancelled`);
      return runOnce(tool, modelName, mapped.args, ctx, timeoutMs).then(({ outcome }) =>
        callResult(outcome, canonical, 1),
      );
    }
    return this.#execute(tool, canonical, modelName, mapped.args, ctx, retry, timeoutMs);
  }

  /** Runs an admitted call with the tool's retry policy. */
  async #execute(
    tool: Tool,
    canonical: string,
    modelName: string,
    args: Record<string, unknown>,
    ctx: ToolContext,
    retry: RetryPolicy,
    timeoutMs: number,
  ): Promise<ToolCallResult> {
    let attempts = 0;
    for (;;) {
      if (ctx.signal.aborted) return failed(canonical, `${modelName} was cancelled`, attempts);
      attempts += 1;
      const { outcome, threw } = await runOnce(tool, modelName, args, ctx, timeoutMs);
      // A thrown error is retried like a failure marked retryable, unless it was a cancellation.
      const retryable = outcome.retryable === true || (threw && !ctx.signal.aborted);
      if (outcome.ok || !retryable || attempts > retry.maxRetries) {
        return callResult(outcome, canonical, attempts);
      }
      try {
        const sleep = this.#options.sleep ?? defaultSleep;
        await sleep(backoffDelay(retry, attempts - 1, this.#options.random ?? Math.random), ctx.signal);
      } catch {
        return callResult(outcome, canonical, attempts);
      }
    }
  }
}

/** `{ ...outcome, canonicalName, attempts }`, what every call answers (see src/objects.ts). */
function callResult(outcome: ToolOutcome, canonicalName: string, attempts: number): ToolCallResult {
  return extend(outcome, { canonicalName, attempts });
}

function failed(canonicalName: string, text: string, attempts = 0): ToolCallResult {
  return { ok: false, text, canonicalName, attempts };
}

const fitsAlways = (): boolean => true;

type Attempt = { readonly outcome: ToolOutcome; readonly threw: boolean };

/**
 * Runs the tool once, within its time limit (`timeoutMs`, 0 = none); an exception becomes a failed
 * outcome, and `threw` says so. Not an async function: a parked agent's `wait_for_instruction` runs
 * here (untimed), and a suspended frame costs it.
 */
function runOnce(
  tool: Tool,
  modelName: string,
  args: Record<string, unknown>,
  ctx: ToolContext,
  timeoutMs: number,
): Promise<Attempt> {
  return timeoutMs === 0
    ? runUntimed(tool, modelName, args, ctx)
    : runTimed(tool, modelName, args, ctx, timeoutMs);
}

/**
 * Runs the tool under a signal that also aborts after `timeoutMs`; then the call fails at once,
 * whether or not the tool stops (a promise that never settles is left behind, not awaited). A tool
 * that answers synchronously sets no timer.
 */
function runTimed(
  tool: Tool,
  modelName: string,
  args: Record<string, unknown>,
  ctx: ToolContext,
  timeoutMs: number,
): Promise<Attempt> {
  const parent = ctx.signal;
  // The tool's signal (the caller's, and the time limit's) is made when the tool first reads it:
  // a controller and a listener on the caller's signal were ~4 µs of every call of a tool that
  // answers at once and never looks (8 % of a zero-latency round in the fan-out benchmark).
  let controller: AbortController | undefined;
  let timeout: DOMException | undefined;
  const onAbort = (): void => controller?.abort(parent.reason);
  const signal = (): AbortSignal => {
    if (controller === undefined) {
      controller = new AbortController();
      if (timeout !== undefined) controller.abort(timeout);
      else if (parent.aborted) controller.abort(parent.reason);
      else parent.addEventListener('abort', onAbort, { once: true });
    }
    return controller.signal;
  };
  const done = (): void => {
    if (controller !== undefined) parent.removeEventListener('abort', onAbort);
  };
  let answer: ToolOutcome | PromiseLike<ToolOutcome>;
  try {
    answer = tool.execute(args, {
      ...ctx,
      get signal() {
        return signal();
      },
    });
  } catch (error) {
    done();
    return Promise.resolve(thrown(modelName, error));
  }
  if (!isThenable(answer)) {
    done();
    return Promise.resolve(settled(answer, modelName));
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<Attempt>((resolve) => {
    timer = setTimeout(() => {
      // Settled before the abort, so a tool that rejects on the abort does not win the race
      // with "aborted" instead of saying the time ran out.
      resolve({ outcome: timedOutOutcome(modelName, timeoutMs), threw: false });
      timeout = timeoutReason(modelName, timeoutMs);
      controller?.abort(timeout);
    }, timeoutMs);
  });
  const ran = Promise.resolve(answer).then(
    (outcome) => settled(outcome, modelName),
    (error: unknown) => thrown(modelName, error),
  );
  return Promise.race([ran, timedOut]).finally(() => {
    clearTimeout(timer);
    done();
  });
}

/** What the model is told of a call its time limit abandoned (thread tools and host tools alike). */
export function timedOutOutcome(name: string, timeoutMs: number): ToolOutcome {
  return {
    ok: false,
    text: `${name} did not finish within ${timeoutMs} ms (its time limit) and was abandoned. Do not call it again with the same arguments.`,
  };
}

/** The reason a timed-out call's signal aborts with. */
export function timeoutReason(name: string, timeoutMs: number): DOMException {
  return new DOMException(`${name} timed out after ${timeoutMs} ms`, 'TimeoutError');
}

function runUntimed(
  tool: Tool,
  modelName: string,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<Attempt> {
  let pending: Promise<ToolOutcome>;
  try {
    pending = Promise.resolve(tool.execute(args, ctx));
  } catch (error) {
    return Promise.resolve(thrown(modelName, error));
  }
  return pending.then(
    (outcome) => settled(outcome, modelName),
    (error: unknown) => thrown(modelName, error),
  );
}

function settled(outcome: unknown, modelName: string): Attempt {
  return { outcome: checkedOutcome(outcome, modelName), threw: false };
}

function thrown(modelName: string, error: unknown): Attempt {
  return {
    outcome: { ok: false, text: `${modelName} failed: ${messageOf(error)}` },
    threw: !isCancellation(error),
  };
}

function isThenable(value: unknown): value is PromiseLike<ToolOutcome> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * A tool module's outcome as the loop needs it: an object with a boolean `ok` and a string `text`.
 * Anything else (a bare string, `undefined`, a BigInt, a Symbol or a function as `text`) is a failed
 * outcome naming the tool: left as it was, an answer without text never settled its turn (the agent
 * hung until its wall clock), and a `text` that is not a string crashed the agent or its journal.
 */
function checkedOutcome(outcome: unknown, modelName: string): ToolOutcome {
  if (typeof outcome === 'object' && outcome !== null) {
    const { ok, text } = outcome as Partial<ToolOutcome>;
    if (typeof ok === 'boolean' && typeof text === 'string') {
      const size = outcomeChars(outcome as ToolOutcome);
      if (size <= MAX_TOOL_RESULT_CHARS) return outcome as ToolOutcome;
      return {
        ok: false,
        text:
          `${modelName} failed: its result holds ${size} characters, more than a tool result may ` +
          `(${MAX_TOOL_RESULT_CHARS}), so it was dropped. Ask for less: a narrower query, a page ` +
          'of the output, or a summary.',
      };
    }
    return {
      ok: false,
      text:
        `${modelName} failed: it returned an invalid outcome: expected \`{ ok: boolean, text: string }\`, ` +
        `got \`ok\` ${describeValue(ok)} and \`text\` ${describeValue(text)}`,
    };
  }
  return {
    ok: false,
    text: `${modelName} failed: it returned an invalid outcome: expected an object \`{ ok, text }\`, got ${describeValue(outcome)}`,
  };
}

/** Characters of an outcome's text and of its state updates' texts. */
function outcomeChars(outcome: ToolOutcome): number {
  let size = outcome.text.length;
  const updates: unknown = outcome.stateUpdates;
  if (Array.isArray(updates)) {
    for (const update of updates as unknown[]) {
      const text = (update as { text?: unknown } | null)?.text;
      if (typeof text === 'string') size += text.length;
    }
  }
  return size;
}

/** An abort: retrying it would only be aborted again. */
function isCancellation(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
