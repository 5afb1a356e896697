/**
 * A worker's side of the `secrets` signal: the credentials registered for masking in this worker's
 * thread (its providers' keys, its MCP servers' tokens, a tool module's or provider's
 * `registerSecretValues`, whatever copy of troupe registers it) are sent, sealed (secret-box.ts),
 * to the supervisors whose agents run here, each getting only its own:
 *
 * - a value registered while one of a supervisor's runs is under way here (in its async context:
 *   its provider being built, its tool modules imported or run, its MCP servers started) goes to
 *   that supervisor, and to every other whose run registers it again;
 * - a value registered outside every run (when the worker starts, before any job) is the worker's
 *   own, and goes to every supervisor that runs an agent here;
 * - a value a module registered when it was imported goes to each supervisor whose runs load that
 *   module, not only the first one's (the import is not run again);
 * - a value registered again outside every run (it is held already) stays whose it was, and one a
 *   supervisor in this thread received from workers ({@link registerReceived}) is no one's here.
 *
 * So supervisors that share a worker (tenants with their own keys) never receive each other's
 * values, not even sealed for them. Each is sent at the start of the supervisor's run, then as it
 * is registered while the supervisor runs one. A supervisor writes results.jsonl, summary.json and
 * the CLI's output from the agents' results in its own process, where these values would
 * otherwise never be masked.
 *
 * Async contexts cost: on Node 20 an AsyncLocalStorage context hooks every promise of the thread
 * (10-33% more CPU for an agent loop, bench/RESULTS.md). So a thread runs without one until runs of
 * a second supervisor (or key) start in it: until then a value registered outside an async context
 * while a run is under way here is that run's supervisor's (the only one), and one registered when
 * no run is under way is the worker's own. Imports still run in a context (their values are the
 * module's), which is dropped when no import is under way. From the second supervisor on, every
 * run gets its context as above (and a run started before keeps the first supervisor's values).
 *
 * Bounds: the thread holds at most MAX_LITERAL_SECRETS values (redact.ts refuses more), and so
 * does each supervisor's list here; a value longer than MAX_FORWARDED_SECRET_CHARS is not sent; a
 * signal carries at most SECRETS_PER_SIGNAL values; at most MAX_SECRET_SUPERVISORS supervisors are
 * remembered (a forgotten one is sent the worker's values and those its later runs register).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { onSecretRegistrations, onSecretValues } from '../../journal/redact.ts';
import type { AgentJobData, SealedSecrets } from '../../protocol/redis.ts';
import { ModuleLoader } from '../actor/resources.ts';
import { MAX_FORWARDED_SECRET_CHARS, MAX_SECRET_SUPERVISORS, SECRETS_PER_SIGNAL } from './constants.ts';
import { sealSecrets } from './secret-box.ts';
import type { SignalSender } from './signals.ts';

/** Whose run the code registering a value belongs to. */
interface RunContext {
  /** {@link recipientOf} the run's job ('' for none: the worker's own). */
  readonly recipient: string;
  /** A module being imported: what it registers, for the later runs that load it. */
  readonly imported?: Set<string>;
}

/**
 * Shared by every worker of this thread (a program may start several): a value registered in one
 * worker's run is that run's supervisor's for all of them, never the worker's own for another.
 */
const runContext = new AsyncLocalStorage<RunContext>();

/** A run context no worker sends values of: those a supervisor received from workers. */
const RECEIVED: RunContext = { recipient: '\u0000received' };

/**
 * The runs of this thread that have no async context: all of one recipient's, until runs of a
 * second start (`contexts`). Shared by every worker of the thread, as `runContext` is.
 */
const bare = { recipient: undefined as string | undefined, runs: 0, contexts: false };
/** Imports under way in a context while runs have none (the context is dropped after them). */
let bareImports = 0;
/** Depth of {@link registerReceived} calls: what registers inside them is no one's here. */
let receiving = 0;

/** Whose run the code now running belongs to (undefined: the worker's own). */
function currentContext(): RunContext | undefined {
  if (receiving > 0) return RECEIVED;
  const context = runContext.getStore();
  if (context !== undefined || bare.runs === 0 || bare.recipient === undefined) return context;
  return { recipient: bare.recipient };
}

/**
 * Runs `register` (a supervisor registering the values workers sent it) so that a worker in this
 * thread sends them to no one: they are the supervisor's, not this worker's own. `register` is
 * synchronous, as registrations are heard.
 */
export function registerReceived(register: () => void): void {
  receiving += 1;
  try {
    register();
  } finally {
    receiving -= 1;
  }
}

/** Values sent to a supervisor, in order, and how many of them it was sent. */
class Outbox {
  readonly values: string[] = [];
  readonly #known = new Set<string>();
  sent = 0;

  add(value: string): boolean {
    if (this.#known.has(value)) return false;
    this.#known.add(value);
    this.values.push(value);
    return true;
  }
}

/**
 * Who a job's values go to: its supervisor and that supervisor's key together. A job naming a
 * supervisor with another key (anyone who can write to Redis can add one) is another recipient,
 * sent only what its own runs register and the worker's own, never what the supervisor's did.
 */
function recipientOf(data: AgentJobData): string {
  return `${data.supervisorId}\n${typeof data.secretsKey === 'string' ? data.secretsKey : ''}`;
}

/** What a worker knows of one supervisor (and key) it sends credentials to. */
interface Recipient {
  readonly supervisorId: string;
  /** Its public key, from its jobs. */
  readonly key: string;
  /** Its runs on this worker now. */
  runs: number;
  /** An agent of it running here, to name in the signal. */
  agentId: string;
  /** The values its runs registered. */
  readonly own: Outbox;
  /** How many of the worker's own values it was sent. */
  workerSent: number;
}

export class SecretForwarder {
  readonly #signals: SignalSender;
  /** The worker's own values (registered outside every run), in the order registered. */
  readonly #worker = new Outbox();
  readonly #recipients = new Map<string, Recipient>();
  /** What each module registered as it was imported, by specifier. */
  readonly #imports = new Map<string, Set<string>>();
  readonly #unsubscribe: (() => void)[];

  constructor(signals: SignalSender) {
    this.#signals = signals;
    // onSecretValues: at once with the values registered so far (the worker's own), then each new
    // one. onSecretRegistrations: every registration, a value held already included, which only a
    // run's counts (registered again outside every run, such as by a supervisor in this thread
    // that received it, a value stays the supervisor's whose run registered it).
    this.#unsubscribe = [
      onSecretValues((values) => this.#learn(values)),
      onSecretRegistrations((values) => {
        if (currentContext() !== undefined) this.#learn(values);
      }),
    ];
  }

  /**
   * Runs `run` (an agent run of `data`) as its supervisor's: what registers a value inside it, now
   * or in what it starts, registers it for that supervisor alone.
   */
  within<T>(data: AgentJobData, run: () => T): T {
    const recipient = recipientOf(data);
    if (!bare.contexts && (bare.recipient === undefined || bare.recipient === recipient)) {
      bare.recipient = recipient;
      return runBare(run);
    }
    bare.contexts = true;
    return runContext.run({ recipient }, run);
  }

  /** A run of `data`'s agent starts here: its supervisor gets the values it was not sent yet. */
  started(data: AgentJobData): void {
    const key = data.secretsKey;
    if (typeof key !== 'string') return;
    const id = recipientOf(data);
    let recipient = this.#recipients.get(id);
    if (recipient === undefined) {
      if (this.#recipients.size >= MAX_SECRET_SUPERVISORS) this.#forgetOne();
      const { supervisorId } = data;
      recipient = {
        supervisorId,
        key,
        runs: 0,
        agentId: data.agent.agentId,
        own: new Outbox(),
        workerSent: 0,
      };
      this.#recipients.set(id, recipient);
    }
    recipient.runs += 1;
    recipient.agentId = data.agent.agentId;
    this.#send(recipient);
  }

  /** The run of `data`'s agent on this worker ended (or parked). */
  ended(data: AgentJobData): void {
    const recipient = this.#recipients.get(recipientOf(data));
    if (recipient !== undefined && typeof data.secretsKey === 'string') recipient.runs -= 1;
  }

  /**
   * A module loader for this worker's runs: what a module registers when it is imported is sent to
   * the supervisor of every run that loads it, since later loads do not import it again.
   */
  moduleLoader(): ModuleLoader {
    return new ForwardingModuleLoader(this);
  }

  /** Stops listening for registrations. */
  close(): void {
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
  }

  /** Imports a module (`load`) the first time, noting what it registers as `specifier`'s. */
  importing<T>(specifier: string, load: () => Promise<T>): Promise<T> {
    const imported = this.#imports.get(specifier);
    const context = currentContext();
    if (imported === undefined) {
      const values = new Set<string>();
      this.#imports.set(specifier, values);
      const importing = { recipient: context?.recipient ?? '', imported: values };
      if (bare.contexts) return runContext.run(importing, load);
      bareImports += 1;
      return runContext.run(importing, load).finally(() => {
        bareImports -= 1;
        // Runs still have no context: stop hooking every promise of the thread for one.
        if (bareImports === 0 && !bare.contexts) runContext.disable();
      });
    }
    // Once the import has run (here, or for another run), its values are this run's too.
    return load().then((loaded) => {
      if (context !== undefined && imported.size > 0) this.#learnFor(context.recipient, [...imported]);
      return loaded;
    });
  }

  #learn(values: readonly string[]): void {
    const sendable = values.filter((value) => value.length <= MAX_FORWARDED_SECRET_CHARS);
    if (sendable.length === 0) return;
    const context = currentContext();
    if (context?.imported !== undefined) for (const value of sendable) context.imported.add(value);
    if (context === undefined || context.recipient === '') {
      // The worker's own: every supervisor running an agent here gets it.
      let added = false;
      for (const value of sendable) added = this.#worker.add(value) || added;
      if (!added) return;
      for (const recipient of this.#recipients.values()) if (recipient.runs > 0) this.#send(recipient);
      return;
    }
    this.#learnFor(context.recipient, sendable);
  }

  /** `values` were registered by a run of `id`'s (of another worker here, or forgotten: none). */
  #learnFor(id: string, values: readonly string[]): void {
    const recipient = this.#recipients.get(id);
    if (recipient === undefined) return;
    let added = false;
    for (const value of values) added = recipient.own.add(value) || added;
    if (added && recipient.runs > 0) this.#send(recipient);
  }

  /** Never throws: it runs inside whatever registered the values (a provider being built). */
  #send(recipient: Recipient): void {
    const pending = [
      ...this.#worker.values.slice(recipient.workerSent),
      ...recipient.own.values.slice(recipient.own.sent),
    ];
    recipient.workerSent = this.#worker.values.length;
    recipient.own.sent = recipient.own.values.length;
    for (let at = 0; at < pending.length; at += SECRETS_PER_SIGNAL) {
      let sealed: SealedSecrets;
      try {
        sealed = sealSecrets(recipient.key, pending.slice(at, at + SECRETS_PER_SIGNAL));
      } catch {
        // Not an X25519 key (a foreign job): nothing can be sealed for it.
        return;
      }
      this.#signals.send(recipient.supervisorId, { type: 'secrets', agentId: recipient.agentId, sealed });
    }
  }

  /** Forgets the first supervisor met that runs nothing here (the first met, if all do). */
  #forgetOne(): void {
    for (const [id, recipient] of this.#recipients) {
      if (recipient.runs === 0) {
        this.#recipients.delete(id);
        return;
      }
    }
    const oldest = this.#recipients.keys().next();
    if (oldest.done !== true) this.#recipients.delete(oldest.value);
  }
}

/** Runs `run` as one of the thread's runs without an async context, until it settles. */
function runBare<T>(run: () => T): T {
  bare.runs += 1;
  let result: T;
  try {
    result = run();
  } catch (error) {
    bare.runs -= 1;
    throw error;
  }
  if (!(result instanceof Promise)) {
    bare.runs -= 1;
    return result;
  }
  return result.finally(() => {
    bare.runs -= 1;
  }) as T;
}

/** A {@link ModuleLoader} that tells the forwarder what each module registered as it was imported. */
class ForwardingModuleLoader extends ModuleLoader {
  readonly #forwarder: SecretForwarder;

  constructor(forwarder: SecretForwarder) {
    super();
    this.#forwarder = forwarder;
  }

  override load(specifier: string): Promise<Record<string, unknown>> {
    return this.#forwarder.importing(specifier, () => super.load(specifier));
  }
}
